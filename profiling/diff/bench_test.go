package diff

import (
	"context"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
)

func BenchmarkCompareVendors(b *testing.B) {
	ctx := context.Background()
	pa, err := loadTrace(ctx, corpus.Path(b, "traces/qwen1.5-0.5b-forward-mi300x.json.gz"), nil)
	if err != nil {
		b.Fatal(err)
	}
	pb, err := loadTrace(ctx, corpus.Path(b, "traces/qwen1.5-0.5b-forward-h100.json.gz"), nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		Compare(pa, pb)
	}
}
