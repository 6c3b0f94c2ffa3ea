package profiling

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
)

// Sweep is a profiling sweep declared as data: one JSON file per sweep
// (fixtures/sweeps/NAME.json) saying which engine serves which model with
// which flags, the workload and levels, and where the golden CSVs of its
// levels live and how closely a run must match them. The test harness runs
// every declared sweep through Run and checks each level against its
// goldens; BenchmarkSweep reports the same runs as Go benchmarks.
type Sweep struct {
	Name        string `json:"name"` // the file's base name without .json
	Description string `json:"description,omitempty"`

	Engine string `json:"engine"` // atom, vllm, sglang or sim
	Model  string `json:"model"`
	// GPU is the device the goldens were recorded on, as the trace names
	// it (e.g. "AMD Instinct MI355X"); real engines only. A runner with
	// another GPU skips the sweep.
	GPU             string            `json:"gpu,omitempty"`
	TP              int               `json:"tp,omitempty"`
	KVCacheDType    string            `json:"kv_cache_dtype,omitempty"`
	MaxNumSeqs      int               `json:"max_num_seqs,omitempty"`
	MaxModelLen     int               `json:"max_model_len,omitempty"`
	Level           *int              `json:"level,omitempty"`
	EnforceEager    bool              `json:"enforce_eager,omitempty"`
	CaptureSizes    []int             `json:"cudagraph_capture_sizes,omitempty"`
	TrustRemoteCode bool              `json:"trust_remote_code,omitempty"`
	ServerArgs      []string          `json:"server_args,omitempty"` // more engine flags, as given
	ServerEnv       map[string]string `json:"server_env,omitempty"`
	// SimKernels are the simulated engine's per-layer kernel tables
	// (serve-sim --kernels): paths relative to the declaration, or
	// "corpus:REL" for a file of the reference corpus, read in place.
	// None: the built-in kernel model.
	SimKernels []string `json:"sim_kernels,omitempty"`
	// TimeScale runs the simulated engine this many times faster than the
	// GPU time it records (its traces hold full-scale times).
	TimeScale float64 `json:"time_scale,omitempty"`
	// ModelConfig is the model's config.json (relative to the declaration),
	// which checks the layer count of every table.
	ModelConfig string `json:"model_config,omitempty"`

	ISL           int     `json:"isl"`
	OSL           int     `json:"osl"`
	RangeRatio    float64 `json:"random_range_ratio,omitempty"` // 0: exact lengths
	Concurrencies []int   `json:"concurrencies"`
	NumPromptsMul int     `json:"num_prompts_mul"` // num_prompts = concurrency × this
	Warmups       int     `json:"warmups,omitempty"`
	Seed          uint64  `json:"seed,omitempty"`

	Tolerance Tolerance `json:"tolerance"`
	// Golden is the directory of the golden CSVs, relative to the
	// declaration: conc{bs}_kernels.csv and conc{bs}_layer.csv per level,
	// bs being the decode batch size of the level's trace.
	Golden string `json:"golden"`

	path string // the declaration file
}

// Tolerance is how far a measured time may be from its golden value: the
// larger of Rel × golden and AbsUS microseconds.
type Tolerance struct {
	Rel   float64 `json:"rel"`
	AbsUS float64 `json:"abs_us"`
}

// DefaultTolerance is 15% or 2 µs, whichever is larger.
var DefaultTolerance = Tolerance{Rel: 0.15, AbsUS: 2}

// Allows reports whether measured is within the tolerance of golden.
func (t Tolerance) Allows(golden, measured float64) bool {
	return math.Abs(measured-golden) <= t.Bound(golden)
}

// Bound is the largest difference allowed from golden.
func (t Tolerance) Bound(golden float64) float64 {
	return max(t.Rel*math.Abs(golden), t.AbsUS)
}

func (t Tolerance) String() string {
	return fmt.Sprintf("%g%% or %g µs", t.Rel*100, t.AbsUS)
}

// LoadSweep reads and checks one sweep declaration.
func LoadSweep(path string) (*Sweep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the sweep declaration: %w", err)
	}
	s, err := ParseSweep(data, path)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ParseSweep reads a sweep declaration; path names it in errors and is the
// base of its relative paths.
func ParseSweep(data []byte, path string) (*Sweep, error) {
	s := &Sweep{path: path}
	if err := json.Unmarshal(data, s, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%s: %w (the fields are those of profiling.Sweep)", path, err)
	}
	if s.Golden == "" {
		s.Golden = filepath.Join("..", "golden", s.Name)
	}
	if s.Tolerance == (Tolerance{}) {
		s.Tolerance = DefaultTolerance
	}
	if err := s.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// LoadSweeps reads every *.json declaration of dir, sorted by name.
func LoadSweeps(dir string) ([]*Sweep, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no sweep declarations (*.json) in %s", dir)
	}
	var out []*Sweep
	for _, p := range paths {
		s, err := LoadSweep(p)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Sweep) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func (s *Sweep) check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if want := strings.TrimSuffix(filepath.Base(s.path), ".json"); s.Name != want {
		bad("name %q: must be the file's base name %q (goldens and benchmarks are named after it)", s.Name, want)
	}
	if strings.ContainsAny(s.Name, "/ \t") {
		bad("name %q: no slashes or spaces (it is part of benchmark names)", s.Name)
	}
	kind, err := engine.ParseKind(s.Engine)
	switch {
	case err != nil:
		bad("engine: %v", err)
	case kind == engine.None:
		bad("engine none attaches to a server that is already running: a sweep declares the engine it starts")
	}
	if s.Model == "" {
		bad("no model: name the model the engine serves")
	}
	if kind != engine.Sim && (len(s.SimKernels) > 0 || s.TimeScale != 0) {
		bad("sim_kernels and time_scale are for engine sim only")
	}
	if kind == engine.Sim && s.GPU != "" {
		bad("gpu names the device of a real engine's goldens; the simulated engine needs none")
	}
	if s.ISL < 1 || s.OSL < 1 {
		bad("isl %d, osl %d: both must be at least 1", s.ISL, s.OSL)
	}
	if s.RangeRatio < 0 || s.RangeRatio > 1 {
		bad("random_range_ratio %v: must be in [0, 1]", s.RangeRatio)
	}
	if len(s.Concurrencies) == 0 {
		bad("no concurrencies")
	}
	for _, c := range s.Concurrencies {
		if c < 1 {
			bad("concurrency %d: must be at least 1", c)
		}
	}
	if len(s.Concurrencies) > 0 && !slices.IsSorted(s.Concurrencies) || len(slices.Compact(slices.Clone(s.Concurrencies))) != len(s.Concurrencies) {
		bad("concurrencies %v: list them once each, in increasing order", s.Concurrencies)
	}
	if s.NumPromptsMul < 1 {
		bad("num_prompts_mul %d: must be at least 1 (num_prompts = concurrency × num_prompts_mul)", s.NumPromptsMul)
	}
	if s.Warmups < 0 {
		bad("warmups %d: must not be negative", s.Warmups)
	}
	if s.ModelConfig != "" {
		if _, err := os.Stat(s.rel(s.ModelConfig)); err != nil {
			bad("model_config: %v (a path relative to the declaration)", err)
		}
	}
	if s.Tolerance.Rel < 0 || s.Tolerance.AbsUS < 0 {
		bad("tolerance %+v: must not be negative", s.Tolerance)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// The engine's own catches (the capture-size trap and the like).
	_, err = s.spec(SweepOptions{}).Check()
	return err
}

// Path is the declaration file.
func (s *Sweep) Path() string { return s.path }

// Kind is the sweep's engine.
func (s *Sweep) Kind() engine.Kind { return engine.Kind(s.Engine) }

// GoldenDir is the directory of the sweep's golden CSVs.
func (s *Sweep) GoldenDir() string { return s.rel(s.Golden) }

// NeedsCorpus reports whether the sweep reads files of the reference corpus.
func (s *Sweep) NeedsCorpus() bool {
	return slices.ContainsFunc(s.SimKernels, func(p string) bool { return strings.HasPrefix(p, CorpusPrefix) })
}

func (s *Sweep) rel(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(s.path), p)
}

// SweepOptions are what a run of a declared sweep needs beyond the
// declaration: where things are on this machine.
type SweepOptions struct {
	// Exe is the engine's executable (the profile-model binary for sim);
	// "": the engine's default.
	Exe  string
	Port int // HTTP port; 0: the engine's default
	// Corpus is the reference corpus directory that "corpus:" paths are
	// read from; "" when there is none.
	Corpus string
	// Concurrencies, when set, replaces the declared levels (a subset for
	// a quick check, one level for a benchmark).
	Concurrencies []int
}

// EngineSpec is the engine the sweep starts.
func (s *Sweep) EngineSpec(o SweepOptions) (engine.Spec, error) {
	if s.NeedsCorpus() && o.Corpus == "" {
		return engine.Spec{}, fmt.Errorf("sim_kernels: the sweep reads the reference corpus, which is not here (../shared/corpus beside the project, or $PROFILE_MODEL_CORPUS)")
	}
	spec := s.spec(o)
	if _, err := spec.Check(); err != nil {
		return spec, err
	}
	for _, p := range s.SimKernels {
		if strings.Contains(p, ",") {
			return spec, fmt.Errorf("sim_kernels %s: serve-sim takes the tables as one comma-separated list, so a path must not hold a comma", p)
		}
	}
	return spec, nil
}

// spec maps the declaration to the engine's fields; "corpus:" paths stay
// as they are when o.Corpus is empty.
func (s *Sweep) spec(o SweepOptions) engine.Spec {
	return engine.Spec{
		Kind: s.Kind(), Model: s.Model, TP: s.TP, Port: o.Port,
		KVCacheDType: s.KVCacheDType, MaxNumSeqs: s.MaxNumSeqs, MaxModelLen: s.MaxModelLen,
		Level: s.Level, EnforceEager: s.EnforceEager, CaptureSizes: s.CaptureSizes,
		TrustRemoteCode: s.TrustRemoteCode, TimeScale: s.TimeScale, Env: s.ServerEnv, Exe: o.Exe,
		ExtraArgs: append(slices.Clone(s.ServerArgs), SimKernelsArgs(s.SimKernels, o.Corpus, s.rel)...),
	}
}

// SweepConfig is the client side of the sweep (Run fills in the server's
// URL, the model and the trace directory).
func (s *Sweep) SweepConfig(o SweepOptions) bench.SweepConfig {
	concs := s.Concurrencies
	if len(o.Concurrencies) > 0 {
		concs = o.Concurrencies
	}
	cfg := bench.SweepConfig{
		ISL: s.ISL, OSL: s.OSL, RangeRatio: s.RangeRatio,
		Concurrencies: slices.Clone(concs), NumPromptsMul: s.NumPromptsMul,
		RequestRate: math.Inf(1), Warmups: s.Warmups, Seed: s.Seed,
	}
	SetPromptTokenizer(&cfg, s.Kind())
	return cfg
}

// Plan is a Run of the sweep into runDir (which must not hold results).
func (s *Sweep) Plan(runDir string, o SweepOptions) (Plan, error) {
	spec, err := s.EngineSpec(o)
	if err != nil {
		return Plan{}, fmt.Errorf("sweep %s: %w", s.Name, err)
	}
	return Plan{Engine: spec, Sweep: s.SweepConfig(o), RunDir: runDir, ModelConfig: s.rel(s.ModelConfig)}, nil
}
