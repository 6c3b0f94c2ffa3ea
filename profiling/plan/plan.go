// Package plan runs sweeps over server settings: a plan file names the
// engine and model, server variants (engine flags and environment) and
// bench variants (workload and concurrency levels); every kept pair gets
// an ordinary run directory under one sweep directory, with plan.json, a
// sweep.json index of each pair's and level's status, and a readme.md
// holding the Pareto frontier of all levels and what each server setting
// changes in the kernels. A sweep resumes level by level.
package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/profile-model/profile-model/internal/sidefile"
	"github.com/profile-model/profile-model/profiling"
	"github.com/profile-model/profile-model/profiling/bench"
	"github.com/profile-model/profile-model/profiling/engine"
)

// Plan is a sweep plan as data (zero fields are left out of plan.json). Its top-level fields are those of a sweep
// declaration (fixtures/sweeps/NAME.json) and hold what every variant
// shares; a server or bench variant sets what it changes.
type Plan struct {
	Name        string `json:"name"`
	Description string `json:"description,omitzero"`
	Engine      string `json:"engine"` // atom, vllm, sglang or sim
	Model       string `json:"model"`
	// GPU is the device the plan runs on, as sweep declarations name it
	// (e.g. "AMD Instinct MI355X"): the fleet's job matrix picks its
	// runners by it. Not needed for the simulated engine.
	GPU string `json:"gpu,omitzero"`

	// Server settings every variant starts from.
	TP              int               `json:"tp,omitzero"`
	KVCacheDType    string            `json:"kv_cache_dtype,omitzero"`
	MaxNumSeqs      int               `json:"max_num_seqs,omitzero"`
	MaxModelLen     int               `json:"max_model_len,omitzero"`
	Level           *int              `json:"level,omitzero"`
	EnforceEager    bool              `json:"enforce_eager,omitzero"`
	CaptureSizes    []int             `json:"cudagraph_capture_sizes,omitzero"`
	TrustRemoteCode bool              `json:"trust_remote_code,omitzero"`
	ServerArgs      []string          `json:"server_args,omitzero"`
	ServerEnv       map[string]string `json:"server_env,omitzero"`
	SimKernels      []string          `json:"sim_kernels,omitzero"` // as in a sweep declaration
	TimeScale       float64           `json:"time_scale,omitzero"`
	ModelConfig     string            `json:"model_config,omitzero"`

	// Workload every bench variant starts from.
	Endpoint      string   `json:"endpoint,omitzero"`
	ISL           int      `json:"isl,omitzero"`
	OSL           int      `json:"osl,omitzero"`
	RangeRatio    *float64 `json:"random_range_ratio,omitzero"`
	Concurrencies []int    `json:"concurrencies,omitzero"`
	NumPromptsMul int      `json:"num_prompts_mul,omitzero"`
	NumPrompts    int      `json:"num_prompts,omitzero"`
	Warmups       *int     `json:"warmups,omitzero"`
	Seed          *uint64  `json:"seed,omitzero"`

	// Servers and Benches are the variants; none: one named "default"
	// made of the top-level fields.
	Servers []Server `json:"servers,omitzero"`
	Benches []Bench  `json:"benches,omitzero"`
	// Links keep only the pairs whose server and bench agree on each link.
	Links []Link `json:"links,omitzero"`

	path string
}

// Server is a server variant: the engine started once, with these
// settings over the plan's.
type Server struct {
	Name         string  `json:"name"`
	TP           int     `json:"tp,omitzero"`
	DP           int     `json:"dp,omitzero"` // data-parallel replicas; only divides throughput per GPU (pass the engine's flag in args)
	KVCacheDType string  `json:"kv_cache_dtype,omitzero"`
	MaxNumSeqs   int     `json:"max_num_seqs,omitzero"`
	MaxModelLen  int     `json:"max_model_len,omitzero"`
	Level        *int    `json:"level,omitzero"`
	EnforceEager *bool   `json:"enforce_eager,omitzero"`
	CaptureSizes []int   `json:"cudagraph_capture_sizes,omitzero"`
	TimeScale    float64 `json:"time_scale,omitzero"`
	// Args follow the plan's server_args; Env is laid over server_env.
	Args []string          `json:"args,omitzero"`
	Env  map[string]string `json:"env,omitzero"`
}

// Bench is a bench variant: a workload and its concurrency levels, run
// against every server it pairs with.
type Bench struct {
	Name          string   `json:"name"`
	Endpoint      string   `json:"endpoint,omitzero"`
	ISL           int      `json:"isl,omitzero"`
	OSL           int      `json:"osl,omitzero"`
	RangeRatio    *float64 `json:"random_range_ratio,omitzero"`
	Concurrencies []int    `json:"concurrencies,omitzero"`
	NumPromptsMul int      `json:"num_prompts_mul,omitzero"`
	NumPrompts    int      `json:"num_prompts,omitzero"` // every level's prompts, whatever its concurrency
	Warmups       *int     `json:"warmups,omitzero"`
	Seed          *uint64  `json:"seed,omitzero"`
}

// Link keeps a pair only when a server setting equals a bench figure, e.g.
// {"server": "max_num_seqs", "bench": "max_concurrency"}.
type Link struct {
	Server string `json:"server"` // one of LinkServerKeys
	Bench  string `json:"bench"`  // one of LinkBenchKeys
}

// The keys a link may compare.
var (
	LinkServerKeys = []string{"max_num_seqs", "max_model_len", "tp"}
	LinkBenchKeys  = []string{"max_concurrency", "min_concurrency", "isl", "osl", "isl_plus_osl"}
)

// Load reads and checks a plan file.
func Load(path string) (*Plan, error) {
	data, err := sidefile.Read(context.Background(), path, "the sweep plan", sidefile.Small)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse reads a plan; path names it in errors and is the base of its
// relative paths.
func Parse(data []byte, path string) (*Plan, error) {
	p := &Plan{path: path}
	if err := json.Unmarshal(data, p, json.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%s: %w (docs/sweeps.md lists a plan's fields)", path, err)
	}
	if len(p.Servers) == 0 {
		p.Servers = []Server{{Name: "default"}}
	}
	if len(p.Benches) == 0 {
		p.Benches = []Bench{{Name: "default"}}
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Path is the plan file.
func (p *Plan) Path() string { return p.path }

// Kind is the plan's engine.
func (p *Plan) Kind() engine.Kind { return engine.Kind(p.Engine) }

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// reserved names are files of the sweep directory.
var reserved = []string{"traces", "diffs", "plan.json", "sweep.json", "readme.md", "pareto.svg", "server.log"}

func (p *Plan) check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !safeName.MatchString(p.Name) {
		bad("name %q: letters, digits, '.', '_' and '-' only (it names the sweep directory)", p.Name)
	}
	kind, err := engine.ParseKind(p.Engine)
	switch {
	case err != nil:
		bad("engine: %v", err)
	case kind == engine.None:
		bad("engine none attaches to a running server: a plan starts its engine once per server variant")
	}
	if p.Model == "" {
		bad("model: name the model the engine serves")
	}
	if kind == engine.Sim && p.GPU != "" {
		bad("gpu %q: the simulated engine needs no GPU; leave gpu out", p.GPU)
	}
	if kind != engine.Sim && (len(p.SimKernels) > 0 || p.TimeScale != 0) {
		bad("sim_kernels and time_scale are for engine sim only")
	}
	if p.ModelConfig != "" {
		if _, err := os.Stat(p.rel(p.ModelConfig)); err != nil {
			bad("model_config: %v (a path relative to the plan)", err)
		}
	}
	p.checkBounds(bad)
	if len(errs) > 0 {
		// Out-of-range sizes stop here: pairing 3000 × 3000 variants, or
		// levels of 2^62 prompts, is what the bounds prevent.
		return errors.Join(errs...)
	}
	seen := map[string]bool{}
	for i, s := range p.Servers {
		where := fmt.Sprintf("servers[%d]", i)
		if !safeName.MatchString(s.Name) || slices.Contains(reserved, s.Name) {
			bad("%s: name %q: letters, digits, '.', '_' and '-', not one of %v (it names a directory)", where, s.Name, reserved)
		} else if seen[s.Name] {
			bad("%s: name %q is given twice", where, s.Name)
		}
		seen[s.Name] = true
		if s.DP < 0 {
			bad("%s (%s): dp %d: must not be negative", where, s.Name, s.DP)
		}
		if kind != engine.Sim && s.TimeScale != 0 {
			bad("%s (%s): time_scale is for engine sim only", where, s.Name)
		}
		if kind != "" && kind != engine.None {
			if _, err := p.spec(s, Options{}).Check(); err != nil {
				bad("%s (%s): %v", where, s.Name, err)
			}
		}
	}
	seen = map[string]bool{}
	for i, b := range p.Benches {
		where := fmt.Sprintf("benches[%d]", i)
		if !safeName.MatchString(b.Name) || slices.Contains(reserved, b.Name) {
			bad("%s: name %q: letters, digits, '.', '_' and '-', not one of %v (it names a directory)", where, b.Name, reserved)
		} else if seen[b.Name] {
			bad("%s: name %q is given twice", where, b.Name)
		}
		seen[b.Name] = true
		w := p.workload(b)
		if w.ISL < 1 || w.OSL < 1 {
			bad("%s (%s): isl %d, osl %d: both must be at least 1 (set them in the bench or at the top)", where, b.Name, w.ISL, w.OSL)
		}
		if w.RangeRatio < 0 || w.RangeRatio > 1 {
			bad("%s (%s): random_range_ratio %v: must be in [0, 1]", where, b.Name, w.RangeRatio)
		}
		if len(w.Concurrencies) == 0 {
			bad("%s (%s): no concurrencies (set them in the bench or at the top)", where, b.Name)
		}
		if slices.ContainsFunc(w.Concurrencies, func(c int) bool { return c < 1 }) || !slices.IsSorted(w.Concurrencies) ||
			len(slices.Compact(slices.Clone(w.Concurrencies))) != len(w.Concurrencies) {
			bad("%s (%s): concurrencies %v: positive, each once, in increasing order", where, b.Name, w.Concurrencies)
		}
		if w.NumPromptsMul < 0 || w.NumPrompts < 0 || w.Warmups < 0 {
			bad("%s (%s): num_prompts_mul, num_prompts and warmups must not be negative", where, b.Name)
		}
		if w.Endpoint != "/v1/completions" && w.Endpoint != "/v1/chat/completions" {
			bad("%s (%s): endpoint %q: /v1/completions or /v1/chat/completions", where, b.Name, w.Endpoint)
		}
	}
	for i, l := range p.Links {
		if !slices.Contains(LinkServerKeys, l.Server) {
			bad("links[%d]: server %q: one of %v", i, l.Server, LinkServerKeys)
		}
		if !slices.Contains(LinkBenchKeys, l.Bench) {
			bad("links[%d]: bench %q: one of %v", i, l.Bench, LinkBenchKeys)
		}
	}
	if len(errs) == 0 {
		if pairs, _ := p.Pairs(); len(pairs) == 0 {
			bad("links: no server and bench variant agree on them, so nothing would run")
		}
	}
	return errors.Join(errs...)
}

func (p *Plan) rel(path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(filepath.Dir(p.path), path)
}

// Workload is a bench variant with the plan's defaults filled in.
type Workload struct {
	Endpoint      string
	ISL, OSL      int
	RangeRatio    float64
	Concurrencies []int
	NumPromptsMul int // used when NumPrompts is 0
	NumPrompts    int
	Warmups       int
	Seed          uint64
}

// Prompts is the number of measured requests of level conc.
func (w Workload) Prompts(conc int) int {
	if w.NumPrompts > 0 {
		return w.NumPrompts
	}
	return conc * max(w.NumPromptsMul, 1)
}

func (p *Plan) workload(b Bench) Workload {
	w := Workload{
		Endpoint: cmp.Or(b.Endpoint, p.Endpoint, "/v1/completions"),
		ISL:      cmp.Or(b.ISL, p.ISL), OSL: cmp.Or(b.OSL, p.OSL),
		Concurrencies: b.Concurrencies, NumPromptsMul: cmp.Or(b.NumPromptsMul, p.NumPromptsMul),
		NumPrompts: cmp.Or(b.NumPrompts, p.NumPrompts),
	}
	if w.Concurrencies == nil {
		w.Concurrencies = p.Concurrencies
	}
	if b.NumPromptsMul > 0 && b.NumPrompts == 0 {
		w.NumPrompts = 0 // the bench's own multiplier wins over the plan's fixed count
	}
	for _, r := range []*float64{b.RangeRatio, p.RangeRatio} {
		if r != nil {
			w.RangeRatio = *r
			break
		}
	}
	for _, n := range []*int{b.Warmups, p.Warmups} {
		if n != nil {
			w.Warmups = *n
			break
		}
	}
	for _, s := range []*uint64{b.Seed, p.Seed} {
		if s != nil {
			w.Seed = *s
			break
		}
	}
	return w
}

// Options are what running a plan needs beyond the plan: where things are
// on this machine and how to report.
type Options struct {
	// Exe is the engine's executable (the profile-model binary for sim);
	// "": the engine's default.
	Exe string
	// Env is added to every variant's environment (a variant's own wins).
	Env  map[string]string
	Port int // HTTP port; 0: the engine's default (sim: a free port)
	// TimeScale, when set, replaces the plan's (sim only).
	TimeScale float64
	// Corpus is the reference corpus directory "corpus:" paths read from.
	Corpus string
}

// spec is the engine a server variant starts; "corpus:" paths stay as
// they are when o.Corpus is empty.
func (p *Plan) spec(s Server, o Options) engine.Spec {
	spec := engine.Spec{
		Kind: p.Kind(), Model: p.Model, TP: cmp.Or(s.TP, p.TP), Port: o.Port,
		KVCacheDType: cmp.Or(s.KVCacheDType, p.KVCacheDType), MaxNumSeqs: cmp.Or(s.MaxNumSeqs, p.MaxNumSeqs),
		MaxModelLen: cmp.Or(s.MaxModelLen, p.MaxModelLen), Level: p.Level, EnforceEager: p.EnforceEager,
		CaptureSizes: p.CaptureSizes, TrustRemoteCode: p.TrustRemoteCode,
		TimeScale: cmp.Or(o.TimeScale, s.TimeScale, p.TimeScale),
		ExtraArgs: append(slices.Clone(p.ServerArgs), s.Args...), Exe: o.Exe,
	}
	if spec.Kind != engine.Sim {
		spec.TimeScale = 0
	}
	if s.Level != nil {
		spec.Level = s.Level
	}
	if s.EnforceEager != nil {
		spec.EnforceEager = *s.EnforceEager
	}
	if s.CaptureSizes != nil {
		spec.CaptureSizes = s.CaptureSizes
	}
	if env := mergeEnv(o.Env, p.ServerEnv, s.Env); len(env) > 0 {
		spec.Env = env
	}
	spec.ExtraArgs = append(spec.ExtraArgs, profiling.SimKernelsArgs(p.SimKernels, o.Corpus, p.rel)...)
	return spec
}

func mergeEnv(layers ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, l := range layers {
		maps.Copy(out, l)
	}
	return out
}

// sweepConfig is the client side of a bench variant (profiling.Run fills
// in the server's URL and the trace directory).
func (p *Plan) sweepConfig(w Workload) bench.SweepConfig {
	cfg := bench.SweepConfig{
		Endpoint: w.Endpoint, ISL: w.ISL, OSL: w.OSL, RangeRatio: w.RangeRatio,
		Concurrencies: slices.Clone(w.Concurrencies), NumPromptsMul: w.NumPromptsMul, NumPrompts: w.NumPrompts,
		RequestRate: math.Inf(1), Warmups: w.Warmups, Seed: w.Seed,
	}
	profiling.SetPromptTokenizer(&cfg, p.Kind())
	return cfg
}

// Pair is a server variant with a bench variant: one run directory.
type Pair struct {
	Server   Server
	Bench    Bench
	Workload Workload
}

// Name is server/bench, also the run directory's path in the sweep.
func (pr Pair) Name() string { return pr.Server.Name + "/" + pr.Bench.Name }

// Dropped is a pair the links left out, with why.
type Dropped struct {
	Server string `json:"server"`
	Bench  string `json:"bench"`
	Why    string `json:"why"`
}

// Pairs is the product of the variants, servers outermost (each engine
// starts once), less the pairs a link drops.
func (p *Plan) Pairs() (kept []Pair, dropped []Dropped) {
	for _, s := range p.Servers {
		for _, b := range p.Benches {
			pr := Pair{Server: s, Bench: b, Workload: p.workload(b)}
			var whys []string
			for _, l := range p.Links {
				sv, bv := p.serverValue(s, l.Server), benchValue(pr.Workload, l.Bench)
				if sv != bv {
					whys = append(whys, fmt.Sprintf("%s %d ≠ %s %d", l.Server, sv, l.Bench, bv))
				}
			}
			if len(whys) > 0 {
				dropped = append(dropped, Dropped{s.Name, b.Name, strings.Join(whys, ", ")})
				continue
			}
			kept = append(kept, pr)
		}
	}
	return kept, dropped
}

func (p *Plan) serverValue(s Server, key string) int {
	spec := p.spec(s, Options{})
	switch key {
	case "max_num_seqs":
		return spec.MaxNumSeqs
	case "max_model_len":
		return spec.MaxModelLen
	case "tp":
		return max(spec.TP, 1)
	}
	return 0
}

func benchValue(w Workload, key string) int {
	switch key {
	case "max_concurrency":
		return slices.Max(append([]int{0}, w.Concurrencies...))
	case "min_concurrency":
		if len(w.Concurrencies) == 0 {
			return 0
		}
		return slices.Min(w.Concurrencies)
	case "isl":
		return w.ISL
	case "osl":
		return w.OSL
	case "isl_plus_osl":
		return w.ISL + w.OSL
	}
	return 0
}

// GPUs is the number of GPUs a server variant uses: TP × DP.
func (p *Plan) GPUs(s Server) int {
	return max(cmp.Or(s.TP, p.TP), 1) * max(s.DP, 1)
}

// Settings are a server variant's settings as flag-like names and values,
// for telling which of them two variants differ in.
func (p *Plan) Settings(s Server) map[string]string {
	spec := p.spec(s, Options{})
	out := map[string]string{
		"tp": strconv.Itoa(max(spec.TP, 1)), "dp": strconv.Itoa(max(s.DP, 1)),
		"kv_cache_dtype": spec.KVCacheDType, "max_num_seqs": strconv.Itoa(spec.MaxNumSeqs),
		"max_model_len": strconv.Itoa(spec.MaxModelLen), "enforce_eager": strconv.FormatBool(spec.EnforceEager),
		"cudagraph_capture_sizes": fmt.Sprint(spec.CaptureSizes), "args": strings.Join(s.Args, " "),
		"time_scale": strconv.FormatFloat(spec.TimeScale, 'g', -1, 64),
	}
	out["level"] = ""
	if spec.Level != nil {
		out["level"] = strconv.Itoa(*spec.Level)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		out["env "+k] = s.Env[k]
	}
	return out
}
