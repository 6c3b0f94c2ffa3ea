package analysis

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/profile-model/profile-model/internal/corpus"
	"github.com/profile-model/profile-model/tracing"
	"github.com/stretchr/testify/require"
)

// The expert's labels (fixtures/labels/*.csv) were written by hand, kernel
// by kernel, from the name, the launching op, the phase of the steps and the
// device, without reading the rules. These are the goals the analysis must
// meet on every corpus trace, as time-weighted agreement.
const (
	goalCategory         = 0.99
	goalCategoryProvider = 0.98
	goalCoverage         = 0.97 // labelled share of each trace's kernel time
)

// labelKey is how a labels file names a kernel: the name, or for a name over
// 200 bytes its first 120 bytes, '…' and 12 hex digits of its SHA-256.
func labelKey(name string) string {
	if len(name) <= 200 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:120] + "…" + hex.EncodeToString(sum[:])[:12]
}

type label struct{ category, provider, reason string }

func readLabels(t *testing.T, path string) map[string]label {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := csv.NewReader(f)
	r.Comment = '#'
	rows, err := r.ReadAll()
	require.NoError(t, err, path)
	require.Equal(t, []string{"kernel", "pct", "category", "provider", "reason"}, rows[0], path)
	m := map[string]label{}
	for i, row := range rows[1:] {
		require.NotEmpty(t, row[2], "%s row %d: category", path, i+2)
		require.NotEmpty(t, row[3], "%s row %d: provider", path, i+2)
		require.NotEmpty(t, row[4], "%s row %d: reason", path, i+2)
		m[row[0]] = label{row[2], row[3], row[4]}
	}
	return m
}

// agreement is the time-weighted agreement of one trace's inventory with
// its labels.
type agreement struct {
	trace                      string
	labelled                   float64 // share of kernel time labelled
	category, categoryProvider float64
	misses                     []string
}

func measureAgreement(t *testing.T, trace string, labels map[string]label) agreement {
	t.Helper()
	res, err := Load(context.Background(), trace, Options{Parts: Inventory})
	require.NoError(t, err)
	var all, lab, cat, both int64
	type miss struct {
		t    int64
		text string
	}
	var misses []miss
	for _, k := range res.Inventory.Kernels.All() {
		if k.Kind != tracing.KindKernel.String() {
			continue
		}
		ns := int64(k.Total)
		all += ns
		l, ok := labels[labelKey(k.Kernel)]
		if !ok {
			continue
		}
		lab += ns
		if k.Category == l.category {
			cat += ns
			if k.Provider == l.provider {
				both += ns
				continue
			}
		}
		misses = append(misses, miss{ns, fmt.Sprintf("%.0fµs %s: got %s / %s, want %s / %s (%s)",
			float64(ns)/1e3, k.ShortName, k.Category, k.Provider, l.category, l.provider, l.reason)})
	}
	sort.Slice(misses, func(i, j int) bool { return misses[i].t > misses[j].t })
	a := agreement{trace: filepath.Base(trace)}
	if all > 0 {
		a.labelled = float64(lab) / float64(all)
	}
	if lab > 0 {
		a.category, a.categoryProvider = float64(cat)/float64(lab), float64(both)/float64(lab)
	}
	for _, m := range misses {
		a.misses = append(a.misses, m.text)
	}
	return a
}

// TestExpertLabelAgreement measures, per corpus trace, the share of the
// labelled kernel time whose category (and category and provider) the
// analysis gives as the expert did, prints the table and holds the goals.
func TestExpertLabelAgreement(t *testing.T) {
	dir := corpus.Dir(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "fixtures", "labels", "*.csv"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var table strings.Builder
	fmt.Fprintf(&table, "%-48s %9s %9s %9s\n", "trace", "labelled", "category", "cat+prov")
	var fails []string
	for _, f := range files {
		base := strings.TrimSuffix(filepath.Base(f), ".csv")
		traces, _ := filepath.Glob(filepath.Join(dir, "traces", base+".*json.gz"))
		require.Len(t, traces, 1, "the corpus trace of %s", f)
		a := measureAgreement(t, traces[0], readLabels(t, f))
		fmt.Fprintf(&table, "%-48s %8.1f%% %8.1f%% %8.1f%%\n", a.trace, 100*a.labelled, 100*a.category, 100*a.categoryProvider)
		if a.labelled < goalCoverage || a.category < goalCategory || a.categoryProvider < goalCategoryProvider {
			fails = append(fails, a.trace)
			for i, m := range a.misses {
				if i == 8 {
					break
				}
				t.Logf("%s: %s", a.trace, m)
			}
		}
	}
	t.Logf("agreement with the expert labels (goal: ≥%.0f%% labelled, ≥%.0f%% category, ≥%.0f%% category and provider):\n%s",
		100*goalCoverage, 100*goalCategory, 100*goalCategoryProvider, table.String())
	require.Empty(t, fails, "traces below the goals")
}
