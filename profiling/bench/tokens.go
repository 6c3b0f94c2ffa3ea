package bench

import (
	"encoding/binary"
	"fmt"
	"time"
)

// tokenSplit says how a request's output tokens were shared among the
// frames that carried them.
type tokenSplit string

// The ways tokens are shared among frames.
const (
	// SplitOnePerFrame: every frame carried one token (the usage total
	// equals the frames, or there was no usage and no tokenizer).
	splitOnePerFrame tokenSplit = "one_per_frame"
	// SplitTokenizer: frames carried several tokens, shared out in
	// proportion to the model's tokenizer count of each frame's text.
	splitTokenizer tokenSplit = "tokenizer"
	// SplitEven: frames carried several tokens and no tokenizer was at
	// hand: the usage total is spread evenly over the frames.
	splitEven tokenSplit = "even"
)

// rank orders splits from exact to estimated: a level reports its least
// exact one.
func (s tokenSplit) rank() int {
	switch s {
	case splitTokenizer:
		return 1
	case splitEven:
		return 2
	}
	return 0
}

// maxTokensPerFrame bounds the tokens one frame is taken to carry: merged
// frames and speculative decoding put a few to a few dozen in a frame.
const maxTokensPerFrame = 64

// frameLog records, as a stream arrives, the frames that may carry tokens:
// each as its gap from the frame before (the first: from the request's
// start), its flags and its text. Which frames carry how many tokens is
// decided at the end, when the usage total is known; only then, and only
// when frames carried several tokens, is the tokenizer asked (counting
// every frame as it came cost ~4 µs a token).
type frameLog struct {
	b    []byte // per frame: uvarint gap, uvarint flags|len(text)<<logShift, text
	last time.Time
	// Frames with text, and with empty text (a token whose text the
	// detokenizer held back); bytes of text in all.
	text, empty, bytes int
}

// Frame flags, in the low bits of each frame's second varint.
const (
	logEmpty     = 1 << iota // the frame's text was empty
	logReasoning             // reasoning_content or reasoning
	logShift     = iota
)

// add records a frame with text (empty: a token sent as "") that arrived
// at now.
func (l *frameLog) add(start, now time.Time, text []byte, reasoning bool) {
	from := l.last
	if from.IsZero() {
		from = start
	}
	l.b = binary.AppendUvarint(l.b, uint64(max(now.Sub(from), 0)))
	l.last = now
	v := uint64(len(text)) << logShift
	l.bytes += len(text)
	if len(text) == 0 {
		v |= logEmpty
		l.empty++
	} else {
		l.text++
	}
	if reasoning {
		v |= logReasoning
	}
	l.b = binary.AppendUvarint(l.b, v)
	l.b = append(l.b, text...)
}

// next decodes the frame at offset p and returns the offset after it.
func (l *frameLog) next(p int) (gap time.Duration, flags uint64, text []byte, q int) {
	g, n := binary.Uvarint(l.b[p:])
	p += n
	v, n := binary.Uvarint(l.b[p:])
	p += n
	end := p + int(v>>logShift)
	return time.Duration(g), v, l.b[p:end], end
}

func (l *frameLog) reset() {
	l.b, l.last = l.b[:0], time.Time{}
	l.text, l.empty, l.bytes = 0, 0, 0
}

// split decides how many tokens each logged frame carried and fills out's
// TTFT, ITL (one gap per token: a frame of k tokens that came g after the
// one before gives k gaps of g/k; the first frame's further tokens give
// none, their times being unknown), TokenEvents, FrameTokens,
// ReasoningTokens and Split. total is the usage total, < 0 when the
// server sent none; count, when not nil, counts the tokens of a frame's
// text with the model's tokenizer (at least 1).
//
// Every frame with text carries at least one token; an empty-text frame
// carries one unless the usage total leaves no room for it (then the
// earliest empty frames are not tokens). Tokens beyond one per frame are
// shared in proportion to the frames' tokenizer counts beyond one, else
// evenly.
func (l *frameLog) split(out *output, total int, count func(string) int) {
	kept := l.text + l.empty
	drop := 0
	if total >= 0 && total < kept {
		drop = min(l.empty, kept-total)
		kept -= drop
	}
	// Tokenizer weights, only when frames carry more than one token each
	// (or nothing else says how many).
	var weights []int
	extraW := 0
	if count != nil && (total < 0 || total > kept) {
		weights = make([]int, 0, l.text+l.empty)
		for p := 0; p < len(l.b); {
			var text []byte
			_, _, text, p = l.next(p)
			w := 1
			if len(text) > 0 {
				w = max(count(string(text)), 1)
			}
			weights = append(weights, w)
			extraW += w - 1
		}
	}
	sum := kept // tokens at one per frame
	if total < 0 && weights != nil {
		sum = kept + extraW
	}
	if total > sum {
		// A usage total beyond maxTokensPerFrame a frame is not believed
		// (and would cost a gap per claimed token): the frames carry at
		// most that, and FrameTokens stays below the claim.
		sum = min(total, kept*maxTokensPerFrame)
	}
	extra := sum - kept
	out.TokenEvents, out.FrameTokens, out.Split = kept, 0, splitOnePerFrame
	if extra > 0 {
		out.Split = splitEven
		if extraW > 0 {
			out.Split = splitTokenizer
		}
	}
	var (
		gap      time.Duration // from the last kept frame
		i        int           // kept frames so far
		cumW     int           // weight beyond one of the kept frames so far
		given    int           // extra tokens given so far
		seenTime bool
	)
	for p, f := 0, 0; p < len(l.b); f++ {
		g, v, _, q := l.next(p)
		p = q
		gap += g
		if v&logEmpty != 0 && drop > 0 {
			drop--
			continue
		}
		k := 1
		if extra > 0 {
			var share int
			if out.Split == splitTokenizer {
				cumW += weights[f] - 1
				share = extra * cumW / extraW
			} else {
				share = extra * (i + 1) / kept
			}
			k += share - given
			given = share
		}
		i++
		out.FrameTokens += k
		if v&logReasoning != 0 {
			out.ReasoningTokens += k
		}
		if !seenTime {
			out.TTFT, seenTime = gap, true
		} else {
			q, r := gap/time.Duration(k), gap%time.Duration(k)
			for j := range k {
				d := q
				if time.Duration(j) < r {
					d++ // the gaps add up to the frame's gap exactly
				}
				out.ITL.add(d)
			}
		}
		gap = 0
	}
}

// splitWarning says when a level's frames carried several tokens and
// nothing told how many each: its per-token gaps are then estimates.
func splitWarning(m *metrics) string {
	if m.Split != splitEven {
		return ""
	}
	return fmt.Sprintf("frames carried %.2f tokens on average and no tokenizer was at hand: each request's usage total is spread evenly over its frames, so ITL divides a frame's gap evenly among its tokens (pass --tokenizer for counts per frame)", m.TokensPerFrame())
}
