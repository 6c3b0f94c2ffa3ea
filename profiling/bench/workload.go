package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/profile-model/profile-model/profiling/tokenizer"
)

// words are common short English words: one token each in the usual BPE
// vocabularies (with their leading space) and at most 8 bytes.
var words = shortWords(`the of and to in is was for on are with as his they
at be this from have or one had by word but not what all were when we there can
an your which their said if do will each about how up out them then she many some
so these would other into has more her two like him see time could no make than
first been its who now people my made over did down only way find use may water
long little very after words called just where most know get through back much
before go good new write our used me man too any day same right look think also
around another came come work three word must because does part even place well
such here take why things help put years different away again off went old
number great tell men say small every found still between name should home big
give air line set own under read last never us left end along while might next
sound below saw something thought both few those always looked show large often
together asked house don world going want school important until form food keep
children feet land side without boy once animals life enough took sometimes four
head above kind began almost live page got earth need far hand high year mother
light parts country father let night following picture being study second eyes
soon times story boys since white days ever paper hard near sentence better best
across during today others however sure means knew try told young miles sun ways
thing whole hear example heard several change answer room sea against top turned
learn point city play toward five using himself usually`)

// shortWords splits text into its distinct words of at most 8 bytes.
func shortWords(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.Fields(text) {
		if len(w) <= 8 && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// The conventions of --random-range-ratio r for a requested length L
// (RangeRule). Every length is at least 1.
const (
	// RangeSGLang draws lengths uniformly in [⌊L·r⌋, L], as SGLang's
	// bench_serving does and the hand-run workflow's recorded runs (r =
	// 0.8) did; r = 1 is exactly L.
	RangeSGLang = "sglang"
	// RangeVLLM draws them in [⌊L·(1−r)⌋, ⌈L·(1+r)⌉], as vLLM's client does
	// (vllm/benchmarks/datasets.py, RandomDataset.get_sampling_params),
	// r in [0, 1); r = 0 is exactly L. vLLM also takes the tokenizer's
	// special tokens off the input length; here the prompt's length is
	// what the server counts.
	RangeVLLM = "vllm"
)

// Lengths draws lengths uniformly in [⌊l·r⌋, l] (RangeSGLang), at least 1.
func Lengths(rng *rand.Rand, n, l int, r float64) []int {
	return LengthsBy(RangeSGLang, rng, n, l, r)
}

// LengthsBy draws n lengths for l under rule (RangeSGLang or RangeVLLM).
func LengthsBy(rule string, rng *rand.Rand, n, l int, r float64) []int {
	lo := max(int(math.Floor(float64(l)*r)), 1)
	hi := max(l, lo)
	if rule == RangeVLLM {
		lo = max(int(math.Floor(float64(l)*(1-r))), 1)
		hi = max(int(math.Ceil(float64(l)*(1+r))), lo)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = lo + rng.IntN(hi-lo+1)
	}
	return out
}

// shaper makes prompt text of a token count. With the served model's
// tokenizer (Counter) every prompt is built to its exact length; otherwise a
// word count is estimated as tokens ≈ Base + PerWord·words, calibrated from
// the server's usage.prompt_tokens.
type shaper struct {
	Base, PerWord float64
	Calibrated    bool // false: one token per word was assumed

	// Counter is the model's tokenizer; nil: shape by word count.
	Counter tokenizer.Counter
	// Tokenizer says where Counter came from (a tokenizer.json path).
	Tokenizer string
	// Offset is what the server adds to the tokenizer's count (a chat
	// template's tokens, a BOS the tokenizer files do not declare),
	// measured by CheckTokenizer.
	Offset int
	// Verified: the server's usage agreed with Counter (up to Offset).
	Verified bool

	fill []string // words that are exactly one token after a space
}

// newTokenizerShaper shapes prompts with a tokenizer. It fails when too few
// of the prompt words are single tokens for lengths to be hit exactly.
func newTokenizerShaper(c tokenizer.Counter, source string) (shaper, error) {
	base := c.Count("a")
	var fill []string
	for _, w := range words {
		if c.Count("a "+w)-base == 1 && c.Count("a "+w+" "+w)-base == 2 {
			fill = append(fill, w)
		}
	}
	if len(fill) < 32 {
		return shaper{}, fmt.Errorf("tokenizer %s: only %d of %d common English words are single tokens after a space; it cannot shape exact prompts", source, len(fill), len(words))
	}
	return shaper{Counter: c, Tokenizer: source, fill: fill, PerWord: 1}, nil
}

// Method says how prompts are shaped, for results and logs.
func (s shaper) Method() string {
	switch {
	case s.Counter != nil:
		return "tokenizer"
	case s.Calibrated:
		return "calibrated"
	default:
		return "assumed"
	}
}

// promptText builds request index's prompt of about tokens tokens (exactly, with
// a tokenizer, unless tokens is below what the distinct first word takes).
func (s shaper) Prompt(rng *rand.Rand, seed uint64, index, tokens int) string {
	if s.Counter == nil || len(s.fill) == 0 {
		return promptText(rng, seed, index, s.Words(tokens))
	}
	target := tokens - s.Offset
	ws := []string{prefixWord(seed, index)}
	// Every fill word adds exactly one token, so this settles in one or two
	// counts; the bound only guards against a tokenizer that merges across
	// words after all.
	best, bestGap := "", math.MaxInt
	for range 16 {
		text := strings.Join(ws, " ")
		gap := target - s.Counter.Count(text)
		if abs(gap) < bestGap {
			best, bestGap = text, abs(gap)
		}
		switch {
		case gap == 0:
			return text
		case gap > 0:
			for range gap {
				ws = append(ws, s.fill[rng.IntN(len(s.fill))])
			}
		case len(ws) == 1:
			return text // the first word alone is already too long
		default:
			ws = ws[:max(len(ws)+gap, 1)]
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// prefixWord is request index's distinct first word: "r" + base-36 of a
// per-run, per-request number (so no two prompts share a prefix-cache block).
func prefixWord(seed uint64, index int) string {
	return "r" + strconv.FormatUint((seed%1000)*1_000_000+uint64(index), 36)
}

// Words is the number of words that makes a prompt of about tokens tokens.
func (s shaper) Words(tokens int) int {
	if s.PerWord <= 0 {
		return max(tokens, 1)
	}
	return max(int(math.Round((float64(tokens)-s.Base)/s.PerWord)), 1)
}

// promptText builds request index's prompt of n words: a distinct first word
// (so no two prompts share a prefix-cache block) then random common words.
func promptText(rng *rand.Rand, seed uint64, index, n int) string {
	var b strings.Builder
	b.Grow(n * 6)
	b.WriteString(prefixWord(seed, index))
	for i := 1; i < n; i++ {
		b.WriteByte(' ')
		b.WriteString(words[rng.IntN(len(words))])
	}
	return b.String()
}

// workload is the random dataset of one level.
type workload struct {
	ISL, OSL   int
	RangeRatio float64
	RangeRule  string // RangeSGLang ("" too) or RangeVLLM
	NumPrompts int
	Seed       uint64
	// FirstIndex numbers the requests (and their distinct first words) from
	// here, so warmups never share a first word with measured requests.
	FirstIndex int
}

// Requests builds the level's requests at once; prompts are shaped with s.
func (w workload) Requests(s shaper) []request {
	src := w.Source(s)
	reqs := make([]request, src.Len())
	for i := range reqs {
		reqs[i] = src.Next()
	}
	return reqs
}

// requestSource makes the level's requests one at a time, the same ones in the
// same order as Requests: a level of thousands of prompts holds only the
// few built ahead of its senders.
func (w workload) Source(s shaper) requestSource {
	rng := rand.New(rand.NewPCG(w.Seed, 0x9e3779b97f4a7c15))
	return &workloadSource{
		w:   w,
		s:   s,
		rng: rng,
		in:  LengthsBy(w.RangeRule, rng, w.NumPrompts, w.ISL, w.RangeRatio),
		out: LengthsBy(w.RangeRule, rng, w.NumPrompts, w.OSL, w.RangeRatio),
	}
}

// requestSource yields a level's requests in order: Next is called Len times, from
// one goroutine.
type requestSource interface {
	Len() int
	Next() request
}

type workloadSource struct {
	w       workload
	s       shaper
	rng     *rand.Rand
	in, out []int
	i       int
}

func (src *workloadSource) Len() int { return src.w.NumPrompts }

func (src *workloadSource) Next() request {
	i := src.i
	src.i++
	index := src.w.FirstIndex + i
	return request{
		Index:     index,
		Prompt:    src.s.Prompt(src.rng, src.w.Seed, index, src.in[i]),
		PromptLen: src.in[i],
		MaxTokens: src.out[i],
	}
}

// fromSlice is a Source of requests built beforehand.
func fromSlice(reqs []request) requestSource { return &sliceSource{reqs: reqs} }

type sliceSource struct {
	reqs []request
	i    int
}

func (src *sliceSource) Len() int { return len(src.reqs) }

func (src *sliceSource) Next() request {
	r := src.reqs[src.i]
	src.i++
	return r
}

// calibrate sends two short probe requests (one output token each) and fits
// tokens = Base + PerWord·words from their usage.prompt_tokens. When the
// server reports no usage it returns one token per word, uncalibrated.
func calibrate(ctx context.Context, c *client, seed uint64) (shaper, error) {
	rng := rand.New(rand.NewPCG(seed, 1))
	probe := func(n int) (int, error) {
		// Indexes beyond any level's keep probes distinct from requests.
		o := c.Do(ctx, request{Index: 900_000 + n, Prompt: promptText(rng, seed, 900_000+n, n), PromptLen: n, MaxTokens: 1})
		if !o.OK() {
			return 0, fmt.Errorf("calibration probe of %d words: %s: %s", n, o.Failure, o.Error)
		}
		if !o.UsagePrompt {
			return 0, nil
		}
		return o.PromptTokens, nil
	}
	const n1, n2 = 64, 512
	t1, err := probe(n1)
	if err != nil {
		return shaper{}, err
	}
	t2, err := probe(n2)
	if err != nil {
		return shaper{}, err
	}
	if t1 == 0 || t2 <= t1 {
		return shaper{Base: 0, PerWord: 1}, nil
	}
	per := float64(t2-t1) / float64(n2-n1)
	return shaper{Base: float64(t1) - per*n1, PerWord: per, Calibrated: true}, nil
}

// checkTokenizer sends two probe prompts built with s's tokenizer and
// compares the server's usage.prompt_tokens with the tokenizer's counts. A
// difference that is the same for both is what the server adds (a chat
// template, or a BOS the tokenizer files do not declare) and becomes
// s.Offset, so prompts still hit their lengths exactly. A difference that
// changes with length means it is not the served model's tokenizer,
// reported as ErrTokenizerMismatch. A server without usage leaves s
// unverified.
func checkTokenizer(ctx context.Context, c *client, seed uint64, s shaper) (shaper, error) {
	rng := rand.New(rand.NewPCG(seed, 2))
	var counted, served [2]int
	for i, n := range [2]int{64, 512} {
		text := s.Prompt(rng, seed, 910_000+i, n)
		counted[i] = s.Counter.Count(text)
		o := c.Do(ctx, request{Index: 910_000 + i, Prompt: text, PromptLen: counted[i], MaxTokens: 1})
		if !o.OK() {
			return s, fmt.Errorf("tokenizer probe of %d tokens: %s: %s", n, o.Failure, o.Error)
		}
		if !o.UsagePrompt {
			return s, nil
		}
		served[i] = o.PromptTokens
	}
	if served[0]-counted[0] != served[1]-counted[1] {
		return s, fmt.Errorf("%w: tokenizer %s counts %d and %d tokens for two probes, the server %d and %d",
			errTokenizerMismatch, s.Tokenizer, counted[0], counted[1], served[0], served[1])
	}
	s.Offset, s.Verified = served[0]-counted[0], true
	return s, nil
}

// ErrTokenizerMismatch: the tokenizer is not the one the server counts with.
var errTokenizerMismatch = errors.New("the tokenizer disagrees with the server")
