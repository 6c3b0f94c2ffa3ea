package plan

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/profile-model/profile-model/internal/results"
	"github.com/profile-model/profile-model/profiling/engine"
)

const fixturePlans = "../../fixtures/sweeps/plans"

// TestFixturePlans: every plan in fixtures loads, and the simulated one
// pairs each of its server variants with its bench variant.
func TestFixturePlans(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join(fixturePlans, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		p, err := Load(path)
		require.NoError(t, err, path)
		pairs, _ := p.Pairs()
		require.NotEmpty(t, pairs, path)
	}
	p, err := Load(filepath.Join(fixturePlans, "sim-server-settings.json"))
	require.NoError(t, err)
	require.Equal(t, engine.Sim, p.Kind())
	pairs, dropped := p.Pairs()
	require.Empty(t, dropped)
	require.Len(t, pairs, len(p.Servers)*len(p.Benches))
	require.GreaterOrEqual(t, len(p.Servers), 2)
	require.Len(t, pairs[0].Workload.Concurrencies, 3)
	// The server variants differ from one another in one setting each.
	key, _, _ := oneSetting(p, p.Servers[0], p.Servers[1])
	require.Equal(t, "max_num_seqs", key)
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	base := `"name": "p", "engine": "sim", "model": "m", "isl": 8, "osl": 4, "concurrencies": [1, 2], "num_prompts_mul": 1`
	for _, tt := range []struct {
		name, doc string
		want      []string // every piece must be in the error
	}{
		{"unknown top-level field", `{` + base + `, "max_num_seq": 4}`, []string{"plan.json", `"max_num_seq"`}},
		{"unknown server field", `{` + base + `, "servers": [{"name": "a"}, {"name": "b", "flags": ["-x"]}]}`, []string{"plan.json", `"flags"`, "/servers/1"}},
		{"unknown bench field", `{` + base + `, "benches": [{"name": "a", "conc": [4]}]}`, []string{`"conc"`, "/benches/0"}},
		{"duplicate server", `{` + base + `, "servers": [{"name": "a"}, {"name": "a"}]}`, []string{"servers[1]", `"a" is given twice`}},
		{"server name is a directory of the sweep", `{` + base + `, "servers": [{"name": "diffs"}]}`, []string{"servers[0]", `"diffs"`}},
		{"capture sizes above max seqs", `{` + base + `, "servers": [{"name": "a", "max_num_seqs": 4, "cudagraph_capture_sizes": [1, 8]}]}`, []string{"servers[0] (a)", "--max-num-seqs 4"}},
		{"bench without levels", `{"name": "p", "engine": "sim", "model": "m", "benches": [{"name": "b", "isl": 8, "osl": 4}]}`, []string{"benches[0] (b)", "no concurrencies"}},
		{"unsorted levels", `{` + base + `, "benches": [{"name": "b", "concurrencies": [4, 2]}]}`, []string{"benches[0] (b)", "increasing order"}},
		{"bad endpoint", `{` + base + `, "endpoint": "/v1/chat"}`, []string{"endpoint", "/v1/chat"}},
		{"unknown link key", `{` + base + `, "links": [{"server": "max_num_seqs", "bench": "top"}]}`, []string{"links[0]", `bench "top"`}},
		{"links keep nothing", `{` + base + `, "max_num_seqs": 64, "links": [{"server": "max_num_seqs", "bench": "max_concurrency"}]}`, []string{"links", "nothing would run"}},
		{"engine none", `{"name": "p", "engine": "none", "model": "m", "isl": 8, "osl": 4, "concurrencies": [1]}`, []string{"engine none"}},
		{"gpu on the simulated engine", `{` + base + `, "gpu": "AMD Instinct MI355X"}`, []string{"gpu", "needs no GPU"}},
		{"time scale on a real engine", `{` + strings.Replace(base, `"sim"`, `"vllm"`, 1) + `, "servers": [{"name": "a", "time_scale": 10}]}`, []string{"servers[0] (a)", "time_scale"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.doc), "plan.json")
			require.Error(t, err)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestLinks: a link keeps only the pairs whose server setting equals the
// bench's figure, and says why it dropped the others.
func TestLinks(t *testing.T) {
	t.Parallel()
	doc := `{"name": "p", "engine": "vllm", "model": "m", "isl": 1024, "osl": 64, "num_prompts_mul": 2,
	  "servers": [{"name": "s16", "max_num_seqs": 16}, {"name": "s64", "max_num_seqs": 64}],
	  "benches": [{"name": "to16", "concurrencies": [4, 8, 16]}, {"name": "to64", "concurrencies": [16, 32, 64]}],
	  "links": [{"server": "max_num_seqs", "bench": "max_concurrency"}]}`
	p, err := Parse([]byte(doc), "plan.json")
	require.NoError(t, err)
	pairs, dropped := p.Pairs()
	var kept []string
	for _, pr := range pairs {
		kept = append(kept, pr.Name())
	}
	require.Equal(t, []string{"s16/to16", "s64/to64"}, kept)
	require.Len(t, dropped, 2)
	require.Equal(t, Dropped{Server: "s16", Bench: "to64", Why: "max_num_seqs 16 ≠ max_concurrency 64"}, dropped[0])
}

// TestWorkloadDefaults: a bench variant's fields win over the plan's; the
// plan's fill in the rest.
func TestWorkloadDefaults(t *testing.T) {
	t.Parallel()
	doc := `{"name": "p", "engine": "sim", "model": "m", "isl": 1024, "osl": 64, "concurrencies": [1, 2], "num_prompts": 10, "seed": 7, "warmups": 2,
	  "benches": [{"name": "a"}, {"name": "b", "osl": 8, "num_prompts_mul": 3, "warmups": 0, "endpoint": "/v1/chat/completions"}]}`
	p, err := Parse([]byte(doc), "plan.json")
	require.NoError(t, err)
	pairs, _ := p.Pairs()
	a, b := pairs[0].Workload, pairs[1].Workload
	require.Equal(t, Workload{Endpoint: "/v1/completions", ISL: 1024, OSL: 64, Concurrencies: []int{1, 2}, NumPrompts: 10, Warmups: 2, Seed: 7}, a)
	require.Equal(t, 10, a.Prompts(2))
	require.Equal(t, Workload{Endpoint: "/v1/chat/completions", ISL: 1024, OSL: 8, Concurrencies: []int{1, 2}, NumPromptsMul: 3, Warmups: 0, Seed: 7}, b)
	require.Equal(t, 6, b.Prompts(2))
}

// TestFrontier checks the frontier of random points by its definition:
// no point beats a frontier point on both axes, and every other point is
// beaten (or equalled) by a frontier point.
func TestFrontier(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		var pts []Point
		for i := range 2 + r.IntN(30) {
			pts = append(pts, Point{Pair: fmt.Sprint("p", i%3), Conc: i, Status: results.StatusOK,
				PerUser: float64(1 + r.IntN(20)), PerGPU: float64(1 + r.IntN(20))})
		}
		pts = append(pts, Point{Pair: "failed", Conc: 99, Status: results.StatusFailed, PerUser: 100, PerGPU: 100})
		front := Frontier(pts)
		require.NotEmpty(t, front, "trial %d", trial)
		on := map[int]bool{}
		for i, f := range front {
			require.NotEqual(t, "failed", f.Pair, "a failed level is not measured")
			on[f.Conc] = true
			if i > 0 {
				require.Greater(t, f.PerUser, front[i-1].PerUser, "by increasing speed per user")
				require.Less(t, f.PerGPU, front[i-1].PerGPU, "trading throughput per GPU for it")
			}
			for _, q := range pts[:len(pts)-1] {
				require.False(t, q.PerUser > f.PerUser && q.PerGPU > f.PerGPU, "trial %d: %+v beats frontier point %+v", trial, q, f)
			}
		}
		for _, q := range pts[:len(pts)-1] {
			if on[q.Conc] {
				continue
			}
			beaten := false
			for _, f := range front {
				beaten = beaten || f.PerUser >= q.PerUser && f.PerGPU >= q.PerGPU
			}
			require.True(t, beaten, "trial %d: %+v is off the frontier and beaten by none of it", trial, q)
		}
	}
}

// TestCheckLevel: a level counts as done only when its files are there,
// read back, and match the workload.
func TestCheckLevel(t *testing.T) {
	t.Parallel()
	w := Workload{Endpoint: "/v1/completions", ISL: 64, OSL: 8, Concurrencies: []int{2}, NumPromptsMul: 2, Seed: 3}
	good := func() *results.Level {
		return &results.Level{SchemaVersion: 1, MaxConcurrency: 2, NumPrompts: 4, Completed: 4, Status: results.StatusOK,
			RandomInputLen: 64, RandomOutputLen: 8, Seed: 3, Endpoint: "/v1/completions", Profile: true}
	}
	write := func(t *testing.T, dir string, l *results.Level) {
		var b bytes.Buffer
		require.NoError(t, l.Write(&b))
		require.NoError(t, os.WriteFile(results.Run(dir).LevelResult(2), b.Bytes(), 0o644))
	}
	for _, tt := range []struct {
		name   string
		mutate func(l *results.Level)
		want   string
	}{
		{"failed level", func(l *results.Level) { l.Status = results.StatusFailed }, "status failed"},
		{"requests missing", func(l *results.Level) { l.Completed = 3 }, "3 of 4 requests"},
		{"other workload", func(l *results.Level) { l.RandomOutputLen = 16 }, "osl 16"},
		{"not profiled", func(l *results.Level) { l.Profile = false }, "not profiled"},
		{"no analysis", func(*results.Level) {}, "analysis"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			l := good()
			tt.mutate(l)
			write(t, dir, l)
			_, err := CheckLevel(dir, 2, w)
			require.ErrorContains(t, err, tt.want)
		})
	}
	dir := t.TempDir()
	_, err := CheckLevel(dir, 2, w)
	require.ErrorIs(t, err, ErrNotRun)
	require.NoError(t, os.WriteFile(results.Run(dir).LevelResult(2), []byte(`{"schema_version": 1, "max_concurrency": 2,`), 0o644))
	_, err = CheckLevel(dir, 2, w)
	require.Error(t, err, "a truncated level file")
	require.NotErrorIs(t, err, ErrNotRun)
}

// TestEstimate: the time model of the dry run, and its scaling by the
// levels measured on disk.
func TestEstimate(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(`{"name": "p", "engine": "sim", "model": "m", "isl": 100, "osl": 10, "concurrencies": [2, 4], "num_prompts": 4, "warmups": 0}`), "plan.json")
	require.NoError(t, err)
	pairs, _ := p.Pairs()
	pw := pairWork{pair: pairs[0], todo: []int{2, 4}, done: map[int]float64{}}
	// conc 2: two waves of 10 tokens and 2 × 100 prompt tokens; conc 4: one
	// wave of 10 tokens and 4 × 100.
	wave := func(conc int) time.Duration {
		return 10*AssumedSimTPOT + time.Duration(100*conc)*AssumedSimPrefillPerToken
	}
	e := newEstimator(p, Options{}, []pairWork{pw})
	require.Equal(t, 2*wave(2)+wave(4)+2*AssumedSimExport+AssumedSimStart, e.remaining())
	require.Equal(t, 2, e.levelsLeft())
	require.Equal(t, e.remaining(), p.Estimate(), "a fresh run's estimate")
	// Two server variants: every level twice, two engine starts.
	p2, err := Parse([]byte(`{"name": "p", "engine": "sim", "model": "m", "isl": 100, "osl": 10, "concurrencies": [2, 4], "num_prompts": 4, "warmups": 0,
		"servers": [{"name": "a"}, {"name": "b"}]}`), "plan.json")
	require.NoError(t, err)
	require.Equal(t, 2*p.Estimate(), p2.Estimate())

	// conc 2 on disk, measured at twice its model: conc 4 is estimated at
	// twice its model too; the engine still has to start for it.
	pw = pairWork{pair: pairs[0], todo: []int{4}, done: map[int]float64{2: 2 * (2 * wave(2)).Seconds()}}
	e = newEstimator(p, Options{}, []pairWork{pw})
	require.InDelta(t, (2*wave(4) + AssumedSimExport + AssumedSimStart).Seconds(), e.remaining().Seconds(), 1e-6)
	require.Equal(t, 1, e.levelsLeft())
}
