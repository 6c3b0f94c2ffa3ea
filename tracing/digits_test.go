package tracing

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/jsonscan"
)

// The fast paths' own number readers, intAt and digitCount, held to the
// plain definitions (the shared readers are fuzzed in jsonscan).
func TestIntAtAndDigitCount(t *testing.T) {
	t.Parallel()
	var texts []string
	for n := 1; n <= 20; n++ {
		num := make([]byte, n)
		for k := range num {
			num[k] = '1' + byte((k*7)%9)
		}
		texts = append(texts, string(num))
	}
	texts = append(texts, "0", "00", "007", "01", "-3", "-03", "1.5", "1.", "1e3", "-", "9223372036854775807", "99999999999999999999")
	for _, text := range texts {
		for _, tail := range []string{",", "}", "]", " ", "x", "\"", ":", ",                 ", "}\n  }, {\"ph\": "} {
			b := []byte(text + tail)
			t.Run(strconv.Quote(string(b)), func(t *testing.T) {
				n := 0
				for n < len(b) && n < 16 && b[n] >= '0' && b[n] <= '9' {
					n++
				}
				require.Equal(t, n, digitCount(b, 0), "digitCount")
				e := jsonscan.ScalarEnd(b, 0)
				want, wantOK := int64(0), false
				if e >= 0 && e < len(b) && jsonscan.NumberEnd(b[e]) {
					want, wantOK = jsonscan.ParseInt(b[:e])
				}
				end, v, ok := intAt(b, 0)
				require.Equal(t, wantOK, ok, "intAt")
				if ok {
					require.Equal(t, e, end)
					require.Equal(t, want, v)
				}
			})
		}
	}
}
