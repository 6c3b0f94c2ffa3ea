package tokenizer

import (
	"bytes"
	"container/heap"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// bpe is the BPE model: a vocabulary and ranked merges.
type bpe struct {
	vocab        map[string]int
	merges       map[uint64]merge // pair of ids -> rank and merged id
	unk          int              // -1: none
	fuseUnk      bool
	byteFallback bool
	byteIDs      [256]int // <0xXX> token ids when byteFallback, -1 if missing
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix

	cache     sync.Map // word -> []int
	cacheSize atomic.Int64
}

type merge struct {
	rank int
	id   int
}

// Words longer than this are not cached, and the cache stops growing at
// maxCacheEntries, so arbitrary text cannot grow it without bound.
const (
	maxCachedWord   = 256
	maxCacheEntries = 1 << 17
)

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func newBPE(m *modelJSON, name string) (*bpe, error) {
	if m.Type != "" && m.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer: %s: model type %q: %w (only BPE models are read)", name, m.Type, errUnsupported)
	}
	if len(m.Vocab) == 0 || string(m.Vocab) == "null" {
		return nil, fmt.Errorf("tokenizer: %s: model has no vocab", name)
	}
	if m.Dropout != nil && *m.Dropout > 0 && *m.Dropout < 1 {
		return nil, fmt.Errorf("tokenizer: %s: BPE dropout %g makes counts random: %w", name, *m.Dropout, errUnsupported)
	}
	vocab, err := readVocab(m.Vocab)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: model vocab: %w", name, err)
	}
	merges, err := readMerges(m.Merges)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: model merges: %w", name, err)
	}
	b := &bpe{
		vocab:        vocab,
		merges:       make(map[uint64]merge, len(merges)),
		unk:          -1,
		fuseUnk:      m.FuseUnk,
		byteFallback: m.ByteFallback,
		ignoreMerges: m.IgnoreMerges,
	}
	for tok, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer: %s: vocab token %q has negative id %d", name, tok, id)
		}
	}
	if m.ContinuingSubwordPrefix != nil {
		b.prefix = *m.ContinuingSubwordPrefix
	}
	if m.EndOfWordSuffix != nil {
		b.suffix = *m.EndOfWordSuffix
	}
	if m.UnkToken != nil {
		id, ok := vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: unk_token %q is not in the vocab", name, *m.UnkToken)
		}
		b.unk = id
	}
	for i := range b.byteIDs {
		b.byteIDs[i] = -1
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			b.byteIDs[i] = id
		}
	}
	for rank, mg := range merges {
		a, ok := vocab[mg.a]
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: merge %d (%q %q) names %q, which is not in the vocab", name, rank, mg.a, mg.b, mg.a)
		}
		c, ok := vocab[mg.b]
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: merge %d (%q %q) names %q, which is not in the vocab", name, rank, mg.a, mg.b, mg.b)
		}
		merged := mg.a + strings.TrimPrefix(mg.b, b.prefix)
		id, ok := vocab[merged]
		if !ok {
			return nil, fmt.Errorf("tokenizer: %s: merge %d (%q %q) makes %q, which is not in the vocab", name, rank, mg.a, mg.b, merged)
		}
		k := pairKey(a, c)
		if _, dup := b.merges[k]; !dup { // the first (lowest) rank wins
			b.merges[k] = merge{rank, id}
		}
	}
	return b, nil
}

// readVocab reads the {"token": id, ...} object token by token: much faster
// than unmarshalling a map of 150k entries.
func readVocab(raw jsontext.Value) (map[string]int, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil {
		return nil, err
	} else if tok.Kind() != '{' {
		return nil, fmt.Errorf("want an object of token ids, got %s", tok.Kind())
	}
	vocab := make(map[string]int, len(raw)/16)
	for dec.PeekKind() != '}' {
		nameTok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := nameTok.String() // the token is void after the next read
		val, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		if val.Kind() != '0' {
			return nil, fmt.Errorf("token %q: id is %s, want a number", name, val.Kind())
		}
		id, err := strconv.Atoi(val.String())
		if err != nil {
			return nil, fmt.Errorf("token %q: id %s is not an integer", name, val.String())
		}
		vocab[name] = id
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, err
	}
	return vocab, nil
}

// readMerges reads the merges list; each is "a b" or ["a", "b"].
func readMerges(raw jsontext.Value) ([]mergeJSON, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil {
		return nil, err
	} else if tok.Kind() != '[' {
		return nil, fmt.Errorf("want a list, got %s", tok.Kind())
	}
	var merges []mergeJSON
	for dec.PeekKind() != ']' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		switch tok.Kind() {
		case '"':
			a, b, ok := strings.Cut(tok.String(), " ")
			if !ok || strings.Contains(b, " ") {
				return nil, fmt.Errorf("merge %d %q is not two tokens separated by one space", len(merges), tok.String())
			}
			merges = append(merges, mergeJSON{a, b})
		case '[':
			var parts []string
			for dec.PeekKind() == '"' {
				p, err := dec.ReadToken()
				if err != nil {
					return nil, err
				}
				parts = append(parts, p.String())
			}
			if end, err := dec.ReadToken(); err != nil {
				return nil, err
			} else if end.Kind() != ']' || len(parts) != 2 {
				return nil, fmt.Errorf("merge %d has %d string parts, want 2", len(merges), len(parts))
			}
			merges = append(merges, mergeJSON{parts[0], parts[1]})
		default:
			return nil, fmt.Errorf("merge %d is %s, neither \"a b\" nor [\"a\", \"b\"]", len(merges), tok.Kind())
		}
	}
	return merges, nil
}

// symbol is one piece of a word being merged, in a linked list.
type symbol struct {
	id         int
	prev, next int // -1 at the ends
	size       int // bytes; 0 once merged into its left neighbour
}

type candidate struct{ rank, pos, id int }

type candidates []candidate

func (c candidates) Len() int { return len(c) }
func (c candidates) Less(i, j int) bool {
	if c[i].rank != c[j].rank {
		return c[i].rank < c[j].rank
	}
	return c[i].pos < c[j].pos
}
func (c candidates) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(x any)   { *c = append(*c, x.(candidate)) }
func (c *candidates) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// encodeWord appends the ids of one pre-tokenised word to dst; byteLevel
// maps its bytes to GPT-2's characters first. The cache is keyed by the
// unmapped word.
func (b *bpe) encodeWord(word string, byteLevel bool, dst []int) []int {
	if v, ok := b.cache.Load(word); ok {
		return append(dst, v.([]int)...)
	}
	mapped := word
	if byteLevel {
		mapped = byteLevelString(word)
	}
	ids := b.mergeWord(mapped)
	if len(word) <= maxCachedWord && b.cacheSize.Load() < maxCacheEntries {
		if _, loaded := b.cache.LoadOrStore(word, ids); !loaded {
			b.cacheSize.Add(1)
		}
	}
	return append(dst, ids...)
}

// mergeWord applies the merges to word by the BPE definition: repeatedly
// merge the adjacent pair of lowest rank, leftmost first.
func (b *bpe) mergeWord(word string) []int {
	if b.ignoreMerges {
		if id, ok := b.vocab[word+b.suffix]; ok {
			return []int{id}
		}
	}
	syms := make([]symbol, 0, len(word))
	for i := 0; i < len(word); {
		_, n := utf8.DecodeRuneInString(word[i:])
		ch := word[i : i+n]
		last := i+n == len(word)
		i += n
		tok := ch
		if len(syms) > 0 && b.prefix != "" {
			tok = b.prefix + tok
		}
		if last && b.suffix != "" {
			tok += b.suffix
		}
		if id, ok := b.vocab[tok]; ok {
			syms = appendSymbol(syms, id, n)
			continue
		}
		if b.byteFallback {
			ok := true
			for j := 0; j < len(ch); j++ {
				ok = ok && b.byteIDs[ch[j]] >= 0
			}
			if ok {
				for j := 0; j < len(ch); j++ {
					syms = appendSymbol(syms, b.byteIDs[ch[j]], 1)
				}
				continue
			}
		}
		if b.unk < 0 {
			continue // the reference drops characters it cannot encode
		}
		if b.fuseUnk && len(syms) > 0 && syms[len(syms)-1].id == b.unk {
			syms[len(syms)-1].size += n
			continue
		}
		syms = appendSymbol(syms, b.unk, n)
	}

	var queue candidates
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := b.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			queue = append(queue, candidate{m.rank, i, m.id})
		}
	}
	heap.Init(&queue)
	for queue.Len() > 0 {
		top := heap.Pop(&queue).(candidate)
		cur := &syms[top.pos]
		if cur.size == 0 || cur.next < 0 {
			continue
		}
		right := syms[cur.next]
		if m, ok := b.merges[pairKey(cur.id, right.id)]; !ok || m.id != top.id {
			continue // stale: a neighbour changed since this pair was queued
		}
		cur.id = top.id
		cur.size += right.size
		syms[cur.next].size = 0
		cur.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if m, ok := b.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				heap.Push(&queue, candidate{m.rank, cur.prev, m.id})
			}
		}
		if cur.next >= 0 {
			if m, ok := b.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				heap.Push(&queue, candidate{m.rank, top.pos, m.id})
			}
		}
	}
	ids := make([]int, 0, len(syms))
	for i := range syms {
		if syms[i].size > 0 {
			ids = append(ids, syms[i].id)
		}
	}
	return ids
}

func appendSymbol(syms []symbol, id, size int) []symbol {
	n := len(syms)
	if n > 0 {
		syms[n-1].next = n
	}
	return append(syms, symbol{id: id, prev: n - 1, next: -1, size: size})
}
