package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/diag"
)

func TestCheckUsage(t *testing.T) {
	t.Parallel()
	type result struct {
		Total                 int // the total left to share out; -1: none
		Prompt                int
		UsageOut, UsagePrompt bool
		Rejected              string
	}
	for _, tc := range []struct {
		name                           string
		text, empty, bytes, max, promL int
		usageOut, usageProm            int // usageOut -1, usageProm 0: no usage figure
		noUsage                        bool
		want                           result
	}{
		{"plausible", 4, 0, 20, 4, 100, 4, 103, false, result{4, 103, true, true, ""}},
		{"several tokens a frame", 4, 0, 64, 16, 100, 16, 100, false, result{16, 100, true, true, ""}},
		{"a few past max_tokens (speculative step)", 4, 0, 20, 4, 100, 7, 100, false, result{7, 100, true, true, ""}},
		{"a held-back token's empty frame", 3, 1, 20, 4, 100, 3, 100, false, result{3, 100, true, true, ""}},
		{"special tokens without text", 4, 0, 4, 64, 100, 4 + usageSlack, 100, false, result{4 + usageSlack, 100, true, true, ""}},
		{"a billion completion tokens", 4, 0, 20, 4, 100, 1_000_000_000, 100, false,
			result{-1, 100, false, true, "usage.completion_tokens 1000000000 for max_tokens 4 and 4 token frames streamed"}},
		{"more tokens than the text can hold", 4, 1, 4, 64, 100, 60, 100, false,
			result{-1, 100, false, true, "usage.completion_tokens 60 for 5 token frames streamed that hold 4 bytes of text: more tokens than the stream can carry"}},
		{"fewer than the frames with text", 5, 0, 20, 8, 100, 1, 100, false, result{-1, 100, false, true, "usage.completion_tokens 1 below the 5 frames with text streamed"}},
		{"negative completion tokens", 4, 0, 20, 4, 100, -5, 100, false, result{-1, 100, false, true, "usage.completion_tokens -5 is negative"}},
		{"negative prompt tokens", 4, 0, 20, 4, 100, 4, -7, false, result{4, 100, true, false, "usage.prompt_tokens -7 is negative"}},
		{"a billion prompt tokens", 4, 0, 20, 4, 100, 4, 1_000_000_000, false,
			result{4, 100, true, false, "usage.prompt_tokens 1000000000 for a prompt of about 100 tokens"}},
		{"no usage", 3, 0, 20, 4, 100, -1, 0, true, result{-1, 100, false, false, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := output{MaxTokens: tc.max, PromptLen: tc.promL, PromptTokens: tc.promL}
			if !tc.noUsage {
				o.OutputTokens, o.UsageOutput = tc.usageOut, true
			}
			if tc.usageProm != 0 {
				o.PromptTokens, o.UsagePrompt = tc.usageProm, true
			}
			total := o.checkUsage(tc.usageOut, tc.text, tc.empty, tc.bytes)
			got := result{total, o.PromptTokens, o.UsageOutput, o.UsagePrompt, o.UsageRejected}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("(-want +got)\n%s", d)
			}
		})
	}
}

// TestSweepImplausibleUsage: a server claiming 10⁹ completion tokens a
// request, or -5, is flagged with a typed warning (also printed as it
// happens), and the throughput comes from the streamed tokens.
func TestSweepImplausibleUsage(t *testing.T) {
	t.Parallel()
	const tokens = 4
	for _, tc := range []struct{ usage, why string }{
		{"1000000000", "usage.completion_tokens 1000000000 for max_tokens 4 and 4 token frames streamed"},
		{"-5", "usage.completion_tokens -5 is negative"},
	} {
		t.Run(tc.usage, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, strings.Replace(atomFrames(tokens, 8), fmt.Sprintf(`"completion_tokens":%d`, tokens), `"completion_tokens":`+tc.usage, 1))
			}))
			defer srv.Close()
			var warn strings.Builder
			res, err := Sweep(context.Background(), SweepConfig{
				URL: srv.URL, Model: "m", Shaper: &shaper{PerWord: 1}, ISL: 8, OSL: tokens, RangeRatio: 1,
				Concurrencies: []int{2}, NumPromptsMul: 2, OutDir: t.TempDir(), Warn: &warn,
			})
			require.NoError(t, err)
			lv := res.Levels[0]
			require.Equal(t, statusOK, lv.Status)
			require.Equal(t, 4*tokens, lv.Metrics.TotalOutput, "the streamed tokens")
			require.Positive(t, lv.Metrics.OutputThroughput)
			require.InDelta(t, float64(4*tokens)/lv.Metrics.Duration.Seconds(), lv.Metrics.OutputThroughput, 1e-6)
			require.True(t, diag.Has(lv.Warnings, diag.UsageImplausible), "%v", lv.Warnings)
			require.False(t, diag.Has(lv.Warnings, diag.Usage), "the usage was given, not missing")
			want := "4 requests reported usage that contradicts what was streamed (first: " + tc.why + ")"
			for _, w := range lv.Warnings {
				if w.Code == diag.UsageImplausible {
					require.Contains(t, w.Message, want)
				}
			}
			require.Contains(t, warn.String(), "warning: concurrency 2: "+want)
		})
	}
}
