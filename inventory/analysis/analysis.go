// Package analysis turns one trace into everything the commands, the run
// report, the test harness and diff print: the inspect summary, the
// per-layer tables of the decode and prefill steps (robust and compatible
// modes), the kernel inventory with category totals, and the warnings of
// all of them. A trace is read once per analysis. Write puts the tables in
// the files the results package names.
package analysis

import (
	"context"
	"fmt"

	"github.com/profile-model/profile-model/internal/diag"
	"github.com/profile-model/profile-model/internal/modelconfig"
	"github.com/profile-model/profile-model/inventory"
	"github.com/profile-model/profile-model/tracing"
)

// Part selects what Analyze computes beyond the summary.
type Part uint8

const (
	// Layers is the robust per-layer table of the decode steps (or, in a
	// trace without engine steps, of its profiler steps or graph replays)
	// and of the prefill steps.
	Layers Part = 1 << iota
	// Compat is the compatible-mode table: anchor-to-anchor slices of all
	// decode kernels, as the hand-run trace-layer script computes it.
	Compat
	// Inventory is the kernel inventory and the category totals.
	Inventory

	// Summary asks for the inspect summary alone (it is always computed).
	Summary

	// All is every part.
	All = Layers | Compat | Inventory
)

// Options control an analysis. The zero value computes every part with the
// built-in category rules.
type Options struct {
	Parts     Part             // 0 = All
	Rules     *inventory.Rules // category rules; nil = the built-in table
	Anchor    string           // compatible mode: kernel-name substring that starts a layer
	NumLayers int              // num_hidden_layers of the model, 0 when unknown (checks the layer count)
	// Arch is the model's architecture from its config.json (nil when
	// unknown): it refines the positions' roles.
	Arch *modelconfig.Architecture
	// Progress is told of the bytes read while the trace loads.
	Progress func(done, total int64)
}

// Result is the analysis of one trace.
type Result struct {
	Path    string
	Trace   *tracing.Trace
	Summary tracing.Summary
	// Decode is the robust table of the decode steps; for a trace without
	// engine steps (a plain model forward), of its profiler steps or graph
	// replays. Nil unless Layers was asked for.
	Decode *inventory.LayerTable
	// Prefill is the robust table of the prefill (and mixed) steps; nil when
	// the trace has none or Layers was not asked for.
	Prefill *inventory.LayerTable
	// Compat is the compatible-mode table; nil unless asked for.
	Compat *inventory.LayerTable
	// Inventory holds every distinct kernel and the category totals; its
	// per-layer column comes from the robust decode table. Nil unless asked.
	Inventory *inventory.Inventory
	// Warnings of the trace and of every table, each once.
	Warnings []diag.Warning

	classes *inventory.Classifier // the categories of this trace's kernels
	arch    *modelconfig.Architecture
}

// DecodeBS is the decode batch size of the trace (0 when it has no decode
// step): the conc{bs}_ of its file names.
func (r *Result) DecodeBS() int { return r.Trace.DecodeBS }

// Load reads the trace at path and analyses it.
func Load(ctx context.Context, path string, opt Options) (*Result, error) {
	// The CPU ops are the launch_op evidence of categories: only the
	// parts that categorise pay for reading them.
	parts := opt.Parts
	if parts == 0 {
		parts = All
	}
	tr, err := tracing.Load(ctx, path, tracing.Options{Progress: opt.Progress, Ops: parts&(Layers|Compat|Inventory) != 0})
	if err != nil {
		return nil, err
	}
	return Analyze(ctx, tr, opt)
}

// Analyze analyses a trace that is already read.
func Analyze(ctx context.Context, tr *tracing.Trace, opt Options) (*Result, error) {
	if opt.Parts == 0 {
		opt.Parts = All
	}
	if opt.Rules == nil {
		opt.Rules = inventory.DefaultRules()
	}
	r := &Result{Path: tr.Path, Trace: tr, Summary: tr.Summarize(), arch: opt.Arch}
	r.Warnings = append(r.Warnings, r.Summary.Warnings...)
	cl := inventory.NewClassifier(tr, opt.Rules)
	r.classes = cl
	lopt := inventory.LayerOptions{Mode: inventory.ModeRobust, Anchor: opt.Anchor, NumLayers: opt.NumLayers, Rules: opt.Rules, Classes: cl}
	if opt.Arch != nil {
		lopt.LayerKinds, lopt.MTPLayers = opt.Arch.LayerKinds, opt.Arch.MTPLayers
	}
	fail := func(err error) (*Result, error) { return nil, fmt.Errorf("%s: %w", tr.Path, err) }

	// The robust decode table is also the inventory's per-layer column, and
	// with the prefill table it gives the classifier its position hints, so
	// that every command categorises a kernel alike.
	var decode, prefill *inventory.LayerTable
	if opt.Parts&(Layers|Inventory) != 0 {
		var err error
		if decode, err = inventory.DecodeLayers(ctx, tr, lopt); err != nil {
			return fail(err)
		}
		if prefill, err = inventory.PrefillLayers(ctx, tr, lopt); err != nil {
			return fail(err)
		}
		if decode.Steps == 0 && prefill.Steps == 0 {
			// No engine steps (a plain model forward): the profiler's
			// steps, or graph replays, are the steps.
			other, err := inventory.StepLayers(ctx, tr, []tracing.StepKind{tracing.StepProfiler, tracing.StepGraph}, lopt)
			if err != nil {
				return fail(err)
			}
			if other.Steps > 0 {
				decode = other
			}
		}
		cl.Learn(decode, prefill)
		decode.AssignRoles(opt.Arch)
		prefill.AssignRoles(opt.Arch)
	}
	if opt.Parts&Layers != 0 {
		r.Decode = decode
		if prefill.Steps > 0 {
			r.Prefill = prefill
		}
		r.addWarnings(r.Decode.Warnings)
		if r.Prefill != nil {
			r.addWarnings(r.Prefill.Warnings)
		}
	}
	if opt.Parts&Compat != 0 {
		copt := lopt
		copt.Mode = inventory.ModeCompat
		compat, err := inventory.DecodeLayers(ctx, tr, copt)
		switch {
		case err != nil && opt.Parts == Compat:
			return fail(err)
		case err != nil:
			// Asked for beside the robust table (a run's level), the
			// compatible table is a courtesy: a trace without its anchor
			// kernel still gets everything else.
			if ctx.Err() != nil {
				return fail(err)
			}
			r.addWarnings([]diag.Warning{diag.New(diag.CompatAnchor, "no compatible-mode table: "+err.Error())})
		default:
			compat.AssignRoles(opt.Arch) // for people: its CSV stays the script's
			r.Compat = compat
			r.addWarnings(compat.Warnings)
		}
	}
	if opt.Parts&Inventory != 0 {
		inv, err := inventory.BuildInventory(ctx, tr, cl, decode)
		if err != nil {
			return fail(err)
		}
		r.Inventory = inv
	}
	return r, nil
}

func (r *Result) addWarnings(ws []diag.Warning) {
	for _, w := range ws {
		dup := false
		for _, have := range r.Warnings {
			if have == w {
				dup = true
				break
			}
		}
		if !dup {
			r.Warnings = append(r.Warnings, w)
		}
	}
}

// TraceFacts reads a level's traces (one per rank) for what a level result
// reports of them: the decode batch size of the first rank and the warnings
// of every rank. It is the trace reader the bench client is given (the
// level's concurrency is not needed here).
func TraceFacts(ctx context.Context, _ int, files []string) (int, []diag.Warning, error) {
	bs := 0
	var warns []diag.Warning
	for i, f := range files {
		tr, err := tracing.Load(ctx, f, tracing.Options{})
		if err != nil {
			return 0, nil, err
		}
		if i == 0 {
			bs = tr.DecodeBS
		}
		warns = append(warns, tr.Warnings...)
	}
	return bs, warns, nil
}

// Explain returns what the analysis says of a kernel name and the evidence
// that decided it (kernels --explain).
func (r *Result) Explain(name string) (inventory.Class, []string) {
	return r.classes.Explain(name)
}
