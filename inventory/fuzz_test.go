package inventory

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzParseRules: any rule file either parses or gets an error naming its
// line; a parsed table classifies any name without panicking.
func FuzzParseRules(f *testing.F) {
	f.Add(string(defaultRulesCSV), "aiter::pa_bf16_x")
	f.Add("priority,pattern,category,provider,short_name\n10,re:a(b,X,y,\n", "ab")
	f.Add("priority,pattern,category,provider,short_name\n\"10,foo\n", "foo")
	f.Fuzz(func(t *testing.T, text, name string) {
		rs, err := ParseRules(strings.NewReader(text), "f.csv")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		c := rs.Classify(name)
		if c.Category == "" {
			t.Fatalf("empty category for %q", name)
		}
	})
}

// FuzzNames: demangling, short names and the name fallback never panic,
// whatever the name; the words of a name are wrapped in '_'; a kernel name
// written to the compatible CSV reads back unchanged.
func FuzzNames(f *testing.F) {
	for _, s := range []string{
		"_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
		"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
		"ck_tile::kentry<2, ck_tile::MoeSortingKernel<x>>(y)", "_ZN7ck_tile6kentryILi1E", "Memcpy HtoD (Host -> Device)", "a<<)(>", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		_ = readableName(name)
		_ = compatShortName(name)
		_ = ShortName(name)
		w := nameWords(name)
		if !strings.HasPrefix(w, "_") || !strings.HasSuffix(w, "_") {
			t.Fatalf("nameWords(%q) = %q: not wrapped in '_'", name, w)
		}
		if c, ok := classifyByName(name); ok && (c.Category == "" || c.Source != SourceName) {
			t.Fatalf("classifyByName(%q) = %+v", name, c)
		}
		if !strings.ContainsAny(name, "\r") && utf8.ValidString(name) {
			back, err := ParseLayerCSV(bytes.NewReader(formatCompatLayerCSV([]LayerRow{{Kernel: name, ShortName: "s", Count: 1}})))
			if err != nil || back[0].Kernel != name {
				t.Fatalf("compat CSV round trip of %q: %v %+v", name, err, back)
			}
		}
	})
}

// FuzzRequiredLiterals: a regular expression's literal filter admits every
// string it matches (the filter may only skip names that cannot match).
func FuzzRequiredLiterals(f *testing.F) {
	for _, r := range DefaultRules().rules {
		if r.re != nil {
			f.Add(strings.TrimPrefix(r.Pattern, "re:"), "void "+r.re.String())
		}
	}
	f.Add(`_(sgemm|s\d+gemm)`, "_s1688gemm")
	f.Add(`x(a|b)+y[cd]{2,3}`, "xabaydcd")
	f.Fuzz(func(t *testing.T, expr, s string) {
		re, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		for _, in := range []string{s, re.FindString(s)} {
			if re.MatchString(in) && !requiredLiterals(expr).admits(in) {
				t.Fatalf("%q matches %q, but its filter %v rules it out", expr, in, requiredLiterals(expr))
			}
		}
	})
}

// FuzzNameWords: the byte-at-a-time nameWords spells every name as the
// rune-at-a-time definition does.
func FuzzNameWords(f *testing.F) {
	f.Add("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_0000123, 256, 128>(ck::Argument)")
	f.Add("fmhaFwdKernel_ÄÖ_ǅx\xff9Σσ")
	f.Fuzz(func(t *testing.T, name string) {
		var b strings.Builder
		b.WriteByte('_')
		prevLower, prevDigit, prevSep := false, false, true
		for _, r := range name {
			switch {
			case unicode.IsLetter(r):
				upper := unicode.IsUpper(r)
				if upper && (prevLower || prevDigit) && !prevSep {
					b.WriteByte('_')
				}
				b.WriteRune(unicode.ToLower(r))
				prevLower, prevDigit, prevSep = !upper, false, false
			case unicode.IsDigit(r):
				b.WriteRune(r)
				prevLower, prevDigit, prevSep = false, true, false
			default:
				if !prevSep {
					b.WriteByte('_')
				}
				prevLower, prevDigit, prevSep = false, false, true
			}
		}
		if !prevSep {
			b.WriteByte('_')
		}
		if got := nameWords(name); got != b.String() {
			t.Fatalf("nameWords(%q) = %q, want %q", name, got, b.String())
		}
	})
}
