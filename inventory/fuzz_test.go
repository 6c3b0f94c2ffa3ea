package inventory

import (
	"strings"
	"testing"
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

// FuzzNames: demangling and short names never panic, whatever the name.
func FuzzNames(f *testing.F) {
	for _, s := range []string{
		"_ZN5aiter24add_rmsnorm_quant_kernelIDF16bDF16bLi256ELi16ELb0ELb0ELb1ELi1EEEvPT0_PT_PfS4_S4_S4_diiiiiiib",
		"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
		"ck_tile::kentry<2, ck_tile::MoeSortingKernel<x>>(y)", "_ZN7ck_tile6kentryILi1E", "Memcpy HtoD (Host -> Device)", "a<<)(>", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		_ = Demangle(name)
		_ = CompatShortName(name)
		_ = ShortName(name)
	})
}
