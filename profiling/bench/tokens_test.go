package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/sim"
	"github.com/profile-model/profile-model/profiling/tokenizer"
	"github.com/profile-model/profile-model/profiling/tokenizer/tokenizertest"
)

// wordCounter counts whitespace-separated words: the simulated engine's
// output words are one token each.
type wordCounter struct{}

func (wordCounter) Count(text string) int { return len(strings.Fields(text)) }

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func gapsList(g gaps) []time.Duration {
	var out []time.Duration
	for d := range g.All() {
		out = append(out, d)
	}
	return out
}

func msd(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// TestFrameLogSplit holds the rules that share a request's tokens among
// its frames to hand-worked cases.
func TestFrameLogSplit(t *testing.T) {
	t.Parallel()
	type fr struct {
		at        float64 // ms from the request's start
		text      string  // a word a token; "": a token sent as empty text
		reasoning bool
	}
	for _, tc := range []struct {
		name, why string
		frames    []fr
		total     int // usage; -1 none
		tokenizer bool
		ttft      float64
		itl       []float64
		events    int
		tokens    int
		reasoning int
		split     tokenSplit
	}{
		{
			name: "one token per frame", frames: []fr{{10, " a", false}, {15, " a", false}, {25, " a", false}},
			total: 3, ttft: 10, itl: []float64{5, 10}, events: 3, tokens: 3, split: splitOnePerFrame,
		},
		{
			name: "merged frames without a tokenizer", why: "12 tokens spread evenly over 3 frames: each frame's gap is divided by 4",
			frames: []fr{{40, " a", false}, {80, " a", false}, {120, " a", false}},
			total:  12, ttft: 40, itl: []float64{10, 10, 10, 10, 10, 10, 10, 10}, events: 3, tokens: 12, split: splitEven,
		},
		{
			name: "merged frames with a tokenizer", why: "weights 3, 1, 2 share the 6 tokens exactly",
			frames: []fr{{30, " a b c", true}, {40, " a", true}, {60, " a b", false}}, total: 6, tokenizer: true,
			ttft: 30, itl: []float64{10, 10, 10}, events: 3, tokens: 6, reasoning: 4, split: splitTokenizer,
		},
		{
			name: "an empty-text token counts", why: "usage says 3 tokens in 3 frames, one of them with empty text",
			frames: []fr{{10, " a", false}, {20, "", false}, {30, " a", false}},
			total:  3, ttft: 10, itl: []float64{10, 10}, events: 3, tokens: 3, split: splitOnePerFrame,
		},
		{
			name: "an empty frame the usage has no room for", why: "the earliest empty frame is not a token; its gap joins the next frame's",
			frames: []fr{{5, "", false}, {10, " a", false}, {20, "", false}, {30, " a", false}},
			total:  3, ttft: 10, itl: []float64{10, 10}, events: 3, tokens: 3, split: splitOnePerFrame,
		},
		{
			name: "no usage", why: "every frame is a token, the empty one too",
			frames: []fr{{10, " a", false}, {20, "", false}}, total: -1,
			ttft: 10, itl: []float64{10}, events: 2, tokens: 2, split: splitOnePerFrame,
		},
		{
			name: "no usage, with a tokenizer", why: "the tokenizer's counts are the tokens",
			frames: []fr{{10, " a b", false}, {20, " a b c", false}}, total: -1, tokenizer: true,
			ttft: 10, itl: []float64{10.0 / 3, 10.0 / 3, 10.0 / 3}, events: 2, tokens: 5, split: splitTokenizer,
		},
		{
			name: "an implausible usage total", why: "a billion tokens in two frames: each frame is taken to carry at most 64",
			frames: []fr{{10, " a", false}, {20, " a", false}}, total: 1e9,
			ttft: 10, itl: repeat(10.0/64, 64), events: 2, tokens: 128, split: splitEven,
		},
		{
			name: "usage above the tokenizer's counts", why: "the tokenizer says one each: the rest is spread evenly",
			frames: []fr{{10, " a", false}, {30, " a", false}}, total: 4, tokenizer: true,
			ttft: 10, itl: []float64{10, 10}, events: 2, tokens: 4, split: splitEven,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Unix(100, 0)
			var l frameLog
			for _, f := range tc.frames {
				l.add(start, start.Add(msd(f.at)), []byte(f.text), f.reasoning)
			}
			var out output
			var count func(string) int
			if tc.tokenizer {
				count = wordCounter{}.Count
			}
			l.split(&out, tc.total, count)
			require.Equal(t, msd(tc.ttft), out.TTFT, tc.why)
			var want []time.Duration
			for _, v := range tc.itl {
				want = append(want, msd(v))
			}
			got := gapsList(out.ITL)
			require.Len(t, got, len(want), tc.why)
			for i := range want {
				require.InDelta(t, float64(want[i]), float64(got[i]), 1, "gap %d: %s", i, tc.why)
			}
			require.Equal(t, tc.events, out.TokenEvents, tc.why)
			require.Equal(t, tc.tokens, out.FrameTokens, tc.why)
			require.Equal(t, tc.reasoning, out.ReasoningTokens, tc.why)
			require.Equal(t, tc.split, out.Split, tc.why)
		})
	}
}

// A frame's gaps add up to the frame's gap to the nanosecond, whatever
// the division leaves.
func TestFrameLogSplitExactSum(t *testing.T) {
	t.Parallel()
	start := time.Unix(0, 0)
	var l frameLog
	l.add(start, start.Add(7), []byte(" a"), false)
	l.add(start, start.Add(7+1000), []byte(" b"), false)
	var out output
	l.split(&out, 8, nil) // 4 and 4 tokens: 1000 ns in 4 gaps
	var sum time.Duration
	for d := range out.ITL.All() {
		sum += d
	}
	require.Equal(t, time.Duration(1000), sum)
	require.Equal(t, 4, out.ITL.Len(), "the first frame's further tokens have no gaps")
}

// dialectFrame is one frame of the test schedule: its arrival (ms after
// the request was sent) and what it carries.
type dialectFrame struct {
	at        float64
	text      string // a token's text is " w" (one word, one token)
	reasoning bool
}

// atomStream writes a stream of the given frames as the ATOM release rel
// (legacy or current) writes it, from the format of ATOM's serving code:
// legacy frames as Python's json.dumps spaces them, with "length" on the
// last content frame, a usage frame without choices and, for chat, an
// empty delta sent at once; current frames compact, with the raw finish
// reason ("max_tokens"; none on a chat content frame), a role frame just
// before the first token, and a usage frame with "choices": []. Both end
// with an empty-text "stop" frame, the usage frame and [DONE]. It returns
// the body and when each event arrives.
func atomStream(rel string, chat bool, frames []dialectFrame, usage int) (body string, at []time.Duration) {
	kv, item := ": ", ", "
	if rel == "current" {
		kv, item = ":", ","
	}
	obj, id := "text_completion", "cmpl-7"
	if chat {
		obj, id = "chat.completion.chunk", "chatcmpl-7"
	}
	head := `{"id"` + kv + `"` + id + `"` + item + `"object"` + kv + `"` + obj + `"` + item + `"created"` + kv + `1796098838` + item + `"model"` + kv + `"m"`
	choice := func(delta, finish string) string {
		if finish == "" {
			finish = "null"
		} else {
			finish = `"` + finish + `"`
		}
		field := `"text"` + kv + `"` + delta + `"`
		if chat {
			field = `"delta"` + kv + delta
		}
		return head + item + `"choices"` + kv + `[{"index"` + kv + `0` + item + field + item + `"finish_reason"` + kv + finish + item + `"logprobs"` + kv + `null}]}`
	}
	chatDelta := func(text string, reasoning bool) string {
		switch {
		case text == "" && !reasoning:
			return "{}"
		case reasoning:
			return `{"reasoning_content"` + kv + `"` + text + `"}`
		}
		return `{"content"` + kv + `"` + text + `"}`
	}
	var b strings.Builder
	emit := func(ms float64, data string) {
		fmt.Fprintf(&b, "data: %s\n\n", data)
		at = append(at, msd(ms))
	}
	if chat && rel == "legacy" {
		emit(0.5, choice("{}", "")) // at once
	}
	for i, f := range frames {
		last := i == len(frames)-1
		finish := ""
		if last && rel == "legacy" {
			finish = "length"
		} else if last && !chat {
			finish = "max_tokens"
		}
		if i == 0 && chat && rel == "current" {
			emit(f.at, choice(`{"role"`+kv+`"assistant"`+item+`"content"`+kv+`""}`, ""))
		}
		if chat {
			emit(f.at, choice(chatDelta(f.text, f.reasoning), finish))
		} else {
			emit(f.at, choice(f.text, finish))
		}
	}
	end := frames[len(frames)-1].at
	if chat {
		emit(end, choice("{}", "stop"))
	} else {
		emit(end, choice("", "stop"))
	}
	u := head
	if rel == "current" {
		u += item + `"choices"` + kv + `[]`
	}
	u += item + `"usage"` + kv + fmt.Sprintf(`{"prompt_tokens"%s8%s"completion_tokens"%s%d%s"total_tokens"%s%d`, kv, item, kv, usage, item, kv, usage+8)
	if rel == "current" && chat {
		u += item + `"prompt_tokens_details"` + kv + `{"cached_tokens"` + kv + `0}`
	}
	emit(end, u+"}}")
	emit(end+1, "[DONE]")
	return b.String(), at
}

// readScheduled reads body as a response whose events arrive at the given
// times, on a fake clock.
func readScheduled(c *client, body string, at []time.Duration) output {
	start := time.Unix(1000, 0)
	i := 0
	c.now = func() time.Time {
		d := at[min(i, len(at)-1)]
		i++
		return start.Add(d)
	}
	out := output{Start: start}
	c.readStream(context.Background(), &out, newSSEReader(bufio.NewReader(strings.NewReader(body))))
	return out
}

// The client measures the same on both ATOM dialects for one schedule:
// merged frames (several tokens each), a token sent as empty text,
// reasoning deltas (chat), the legacy empty opening delta and the current
// role frame (neither a token), and the extra "stop" frame (not a token).
func TestDialectsMeasureAlike(t *testing.T) {
	t.Parallel()
	// 13 tokens: 3 reasoning (chat) in one frame, then 4, 3, one held
	// back as empty text, and 2 (its text comes with the next).
	frames := []dialectFrame{
		{40, " r r r", true}, {70, " a b c d", false}, {110, " e f g", false}, {120, "", false}, {130, " h i", false},
	}
	for _, chat := range []bool{false, true} {
		for _, tok := range []bool{false, true} {
			name := fmt.Sprintf("chat=%v/tokenizer=%v", chat, tok)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var outs []output
				for _, rel := range []string{"legacy", "current"} {
					c := &client{Endpoint: "/v1/completions"}
					if chat {
						c.Endpoint = "/v1/chat/completions"
					}
					if tok {
						c.SetTokenizer(wordCounter{})
					}
					body, at := atomStream(rel, chat, frames, 13)
					o := readScheduled(c, body, at)
					require.True(t, o.OK(), "%s: %s", rel, o.Error)
					outs = append(outs, o)
				}
				if d := cmp.Diff(outs[0], outs[1], cmp.AllowUnexported(gaps{})); d != "" {
					t.Fatalf("legacy and current differ (-legacy +current):\n%s", d)
				}
				o := outs[0]
				require.Equal(t, msd(40), o.TTFT, "TTFT is the first frame's, reasoning or not")
				require.Equal(t, msd(131), o.E2EL)
				require.Equal(t, 13, o.OutputTokens)
				require.Equal(t, 5, o.TokenEvents, "5 frames carried tokens, the empty-text one included")
				require.Equal(t, 13, o.FrameTokens)
				var sum time.Duration
				for d := range o.ITL.All() {
					sum += d
				}
				require.Equal(t, msd(130-40), sum, "the gaps cover first to last frame")
				if !tok {
					require.Equal(t, splitEven, o.Split)
					return
				}
				// With the tokenizer every frame's count is known.
				require.Equal(t, splitTokenizer, o.Split)
				want := []time.Duration{msd(7.5), msd(7.5), msd(7.5), msd(7.5), 13333334, 13333333, 13333333, msd(10), msd(5), msd(5)}
				require.Equal(t, want, gapsList(o.ITL))
				if chat {
					require.Equal(t, 3, o.ReasoningTokens)
				} else {
					require.Zero(t, o.ReasoningTokens, "completions stream no reasoning deltas")
				}
			})
		}
	}
}

// A chat stream of the current release whose first token is sent as
// empty text: the role frame is not a token, the empty delta is.
func TestEmptyFirstToken(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{"legacy", "current"} {
		c := &client{Endpoint: "/v1/chat/completions"}
		body, at := atomStream(rel, true, []dialectFrame{{30, "", false}, {40, " a", false}}, 2)
		o := readScheduled(c, body, at)
		require.True(t, o.OK(), o.Error)
		require.Equal(t, msd(30), o.TTFT, rel)
		require.Equal(t, 2, o.TokenEvents, rel)
		require.Equal(t, splitOnePerFrame, o.Split, rel)
	}
}

// The closing and opening frames parse as such.
func TestParseFrameFinishAndRole(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, frame  string
		finish, role bool
	}{
		{"content", `{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`, false, false},
		{"stop", `{"choices":[{"index":0,"text":"","finish_reason":"stop"}]}`, true, false},
		{"role frame", `{"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, false, true},
		{"null role", `{"choices":[{"delta":{"role":null,"content":""}}]}`, false, false},
		{"non-ASCII finish (general decoder)", `{"choices":[{"text":"","finish_reason":"stöp"}]}`, true, false},
	} {
		f, err := parseFrame([]byte(tt.frame), &chunk{})
		require.NoError(t, err, tt.name)
		require.Equal(t, tt.finish, f.finish, tt.name)
		require.Equal(t, tt.role, f.role, tt.name)
		checkFrame(t, []byte(tt.frame))
	}
}

// sweepSim runs one level against a simulated engine and returns it with
// its result document.
func sweepSim(t *testing.T, cfg sim.Config, sc SweepConfig) (*LevelResult, *results.Level) {
	t.Helper()
	url, _ := startSim(t, cfg)
	sc.URL, sc.Model, sc.OutDir = url, simModel, t.TempDir()
	if sc.RangeRatio == 0 {
		sc.RangeRatio = 1
	}
	res, err := Sweep(context.Background(), sc)
	require.NoError(t, err)
	lv := res.Levels[0]
	require.Equal(t, statusOK, lv.Status, "%v", lv.Warnings)
	doc, err := results.LoadLevel(lv.ResultFile)
	require.NoError(t, err)
	return lv, doc
}

// With frames of 4 tokens, ITL is still the engine's time per token (not
// per frame) and tokens_per_frame says 4; the tokens of a frame are spread
// evenly (no tokenizer), with a warning saying so. ITL per token is held
// within each request: every frame after the first gives 4 gaps that
// differ by at most a nanosecond, and the gaps add up to no more than the
// stream lasted (a frame's whole gap given to each of its tokens would be
// 4 times that). The level of one token a frame is the same engine
// streaming unmerged; its ITL is logged beside, not compared: the two
// levels are two engines whose wall-clock pace a loaded machine sets
// apart (medians of 13.0 and 20.4 ms were seen, with two CPU hogs), and
// the median of single steps and of 4-step averages part too.
func TestSweepMergedFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two levels against the simulated engine at full time scale; skipped with -short")
	}
	t.Parallel()
	const osl, conc = 64, 4
	sc := SweepConfig{ISL: 64, OSL: osl, Concurrencies: []int{conc}, NumPromptsMul: 2}
	type run struct {
		lv  *LevelResult
		doc *results.Level
	}
	runs := map[int]*run{}
	var mu sync.Mutex
	t.Run("merge", func(t *testing.T) {
		for _, merge := range []int{1, 4} {
			t.Run(strconv.Itoa(merge), func(t *testing.T) {
				t.Parallel()
				lv, doc := sweepSim(t, sim.Config{TimeScale: 1, MergeFrames: merge}, sc)
				mu.Lock()
				runs[merge] = &run{lv, doc}
				mu.Unlock()
			})
		}
	})
	one, four := runs[1], runs[4]
	require.InDelta(t, 1.0, one.doc.TokensPerFrame, 1e-9)
	require.Equal(t, string(splitOnePerFrame), one.doc.TokensPerFrameMethod)
	require.InDelta(t, 4.0, four.doc.TokensPerFrame, 1e-9, "64 tokens in 16 frames of 4")
	require.Equal(t, string(splitEven), four.doc.TokensPerFrameMethod)
	require.Equal(t, osl*conc*2, four.doc.TotalOutputTokens)
	require.Contains(t, strings.Join(diagMessages(four.lv), "\n"), "spread evenly")
	for i, o := range four.lv.Outputs {
		require.Equal(t, osl/4, o.TokenEvents)
		require.Equal(t, osl-4, o.ITL.Len(), "a gap per token after the first frame")
		g := gapsList(o.ITL)
		for f := 0; f < len(g); f += 4 {
			frame := slices.Clone(g[f : f+4])
			slices.Sort(frame)
			require.LessOrEqual(t, frame[3]-frame[0], time.Duration(1), "request %d, frame %d: its gap spread evenly over its 4 tokens: %v", i, f/4+1, g[f:f+4])
		}
		requireGapsWithin(t, o, i)
	}
	t.Logf("ITL p50: %.3f ms one token per frame, %.3f ms four per frame; TPOT p50 %.3f / %.3f ms",
		one.doc.ITL.Median, four.doc.ITL.Median, one.doc.TPOT.Median, four.doc.TPOT.Median)
}

// requireGapsWithin checks that request i's gaps add up to no more than
// its stream lasted after the first token.
func requireGapsWithin(t *testing.T, o output, i int) {
	t.Helper()
	var sum time.Duration
	for d := range o.ITL.All() {
		require.GreaterOrEqual(t, d, time.Duration(0), "request %d", i)
		sum += d
	}
	require.LessOrEqual(t, sum, o.E2EL-o.TTFT, "request %d: the gaps lie between the first token and the stream's end", i)
}

func diagMessages(lv *LevelResult) []string {
	var out []string
	for _, w := range lv.Warnings {
		out = append(out, w.Message)
	}
	return out
}

// A thinking model: TTFT is to the first reasoning token, the output count
// includes the reasoning, and the result says how many tokens were
// reasoning, per level and (with details) per request.
func TestSweepReasoningCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a level against the simulated engine; skipped with -short")
	}
	t.Parallel()
	const osl, reasoning, conc = 30, 20, 2
	lv, doc := sweepSim(t, sim.Config{TimeScale: 5, ReasoningTokens: reasoning},
		SweepConfig{Endpoint: "/v1/chat/completions", ISL: 32, OSL: osl, Concurrencies: []int{conc}, NumPromptsMul: 2, Details: true})
	require.Equal(t, reasoning*conc*2, doc.ReasoningTokens)
	require.Equal(t, osl*conc*2, doc.TotalOutputTokens, "reasoning tokens are output tokens")
	require.Equal(t, []int{reasoning, reasoning, reasoning, reasoning}, doc.Details.ReasoningLens)
	for _, o := range lv.Outputs {
		// Every token after the first has its gap, the 20 reasoning ones
		// included: TTFT is to the first reasoning token, 29 gaps before
		// the last (to the first answer token it would leave 9).
		require.Equal(t, osl-1, o.ITL.Len())
		require.Equal(t, osl, o.FrameTokens)
	}
}

// The client counts the same on both dialects of the simulated engine,
// with merged frames, reasoning and tokens sent as empty text, given the
// served model's tokenizer (so each frame's count is exact): per request
// the same frames, tokens and gaps, and gaps that lie within the stream.
// The two dialects are two engines, whose wall-clock pace a loaded
// machine sets apart: their ITL medians are logged, not compared
// (TestDialectsMeasureAlike compares the times of one schedule exactly).
func TestSweepDialectsAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two levels against the simulated engine; skipped with -short")
	}
	t.Parallel()
	const osl, conc = 40, 4
	docs := map[sim.Release]*results.Level{}
	lvs := map[sim.Release]*LevelResult{}
	var mu sync.Mutex
	t.Run("release", func(t *testing.T) {
		for _, rel := range []sim.Release{sim.ReleaseLegacy, sim.ReleaseCurrent} {
			t.Run(string(rel), func(t *testing.T) {
				t.Parallel()
				lv, doc := sweepSim(t, sim.Config{TimeScale: 1, Release: rel, MergeFrames: 4, ReasoningTokens: 10, EmptyTokenEvery: 7},
					SweepConfig{Endpoint: "/v1/chat/completions", ISL: 32, OSL: osl, Concurrencies: []int{conc}, NumPromptsMul: 2,
						Tokenizer: wordCounter{}, TokenizerSource: "words"})
				mu.Lock()
				docs[rel], lvs[rel] = doc, lv
				mu.Unlock()
			})
		}
	})
	l, c := docs[sim.ReleaseLegacy], docs[sim.ReleaseCurrent]
	for _, d := range []*results.Level{l, c} {
		require.Equal(t, string(splitTokenizer), d.TokensPerFrameMethod)
		require.Equal(t, osl*conc*2, d.TotalOutputTokens)
		require.Equal(t, 10*conc*2, d.ReasoningTokens)
	}
	require.Equal(t, l.TokensPerFrame, c.TokensPerFrame)
	for i := range lvs[sim.ReleaseLegacy].Outputs {
		a, b := lvs[sim.ReleaseLegacy].Outputs[i], lvs[sim.ReleaseCurrent].Outputs[i]
		require.Equal(t, a.TokenEvents, b.TokenEvents, "request %d", i)
		require.Equal(t, a.FrameTokens, b.FrameTokens, "request %d", i)
		require.Equal(t, a.ITL.Len(), b.ITL.Len(), "request %d", i)
		requireGapsWithin(t, a, i)
		requireGapsWithin(t, b, i)
	}
	t.Logf("ITL p50 legacy %.3f ms, current %.3f ms; tokens per frame %.3f", l.ITL.Median, c.ITL.Median, l.TokensPerFrame)
}

// BenchmarkReadStreamTokenizer is BenchmarkReadStream with the model's
// tokenizer counting every frame (a byte-level BPE fixture): the cost a
// tokenizer adds per token.
func BenchmarkReadStreamTokenizer(b *testing.B) {
	tr := tokenizertest.Train(strings.Repeat(tokenizertest.TrainText+"\n", 4), 800)
	data, err := tr.JSON(tokenizertest.Options{Split: true, BOS: true})
	require.NoError(b, err)
	tok, err := tokenizer.Parse(data)
	require.NoError(b, err)
	const n = 1000
	body := []byte(atomFrames(n, 1024))
	c := &client{}
	c.SetTokenizer(tok)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		out := output{Start: time.Now()}
		c.readStream(context.Background(), &out, newSSEReader(bytes.NewReader(body)))
		if !out.OK() || out.TokenEvents != n {
			b.Fatalf("%s: %s", out.Failure, out.Error)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/token")
}
