package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/profile-model/profile-model/profiling/fleet"
)

// The fleet's GitHub Actions workflows are checked here so that they do
// not rot between the nightlies that run them: their structure (known
// keys only, jobs that exist, steps with run or uses), every expression's
// references (matrix fields that profile-model matrix prints, declared
// inputs, needs' outputs, earlier steps' ids), the profile-model commands
// and flags their scripts call, the artifacts the merge job downloads, and
// the scripts' shell syntax (bash -n).

const workflowDir = "../../.github/workflows"

// fleetWorkflows are the workflow files the fleet consists of.
var fleetWorkflows = []string{"gpu-sweeps.yml", "gpu-sweep-jobs.yml"}

type ghWorkflow struct {
	Name        string            `yaml:"name"`
	On          ghOn              `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Concurrency *ghConcurrency    `yaml:"concurrency"`
	Env         map[string]string `yaml:"env"`
	Defaults    struct {
		Run struct {
			Shell string `yaml:"shell"`
		} `yaml:"run"`
	} `yaml:"defaults"`
	Jobs map[string]*ghJob `yaml:"jobs"`
}

type ghOn struct {
	WorkflowDispatch *ghTrigger       `yaml:"workflow_dispatch"`
	WorkflowCall     *ghTrigger       `yaml:"workflow_call"`
	Schedule         []map[string]any `yaml:"schedule"`
	Push             *ghFilter        `yaml:"push"`
	PullRequest      *ghFilter        `yaml:"pull_request"`
}

type ghTrigger struct {
	Inputs map[string]ghInput `yaml:"inputs"`
}

type ghInput struct {
	Description string `yaml:"description"`
	Type        string `yaml:"type"`
	Required    bool   `yaml:"required"`
	Default     any    `yaml:"default"`
}

type ghFilter struct {
	Tags     []string `yaml:"tags"`
	Branches []string `yaml:"branches"`
	Paths    []string `yaml:"paths"`
}

type ghConcurrency struct {
	Group            string `yaml:"group"`
	CancelInProgress any    `yaml:"cancel-in-progress"`
}

type ghJob struct {
	Name           string            `yaml:"name"`
	Needs          ghList            `yaml:"needs"`
	If             string            `yaml:"if"`
	RunsOn         any               `yaml:"runs-on"`
	TimeoutMinutes any               `yaml:"timeout-minutes"`
	Permissions    map[string]string `yaml:"permissions"`
	Concurrency    *ghConcurrency    `yaml:"concurrency"`
	Strategy       *struct {
		FailFast bool `yaml:"fail-fast"`
		Matrix   any  `yaml:"matrix"`
	} `yaml:"strategy"`
	Uses    string            `yaml:"uses"`
	With    map[string]any    `yaml:"with"`
	Secrets any               `yaml:"secrets"`
	Outputs map[string]string `yaml:"outputs"`
	Env     map[string]string `yaml:"env"`
	Steps   []ghStep          `yaml:"steps"`
}

type ghStep struct {
	Name  string            `yaml:"name"`
	ID    string            `yaml:"id"`
	If    string            `yaml:"if"`
	Uses  string            `yaml:"uses"`
	With  map[string]any    `yaml:"with"`
	Run   string            `yaml:"run"`
	Env   map[string]string `yaml:"env"`
	Shell string            `yaml:"shell"`
}

// ghList is a YAML string or list of strings (needs: a or needs: [a, b]).
type ghList []string

func (l *ghList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = ghList{n.Value}
		return nil
	}
	var s []string
	err := n.Decode(&s)
	*l = s
	return err
}

// checkWorkflows checks a set of workflow files (name → content) and
// returns every problem found.
func checkWorkflows(files map[string][]byte) []error {
	var errs []error
	bad := func(file, format string, a ...any) { errs = append(errs, fmt.Errorf(file+": "+format, a...)) }
	wfs := map[string]*ghWorkflow{}
	for _, name := range slices.Sorted(mapKeys(files)) {
		dec := yaml.NewDecoder(bytes.NewReader(files[name]))
		dec.KnownFields(true)
		var wf ghWorkflow
		if err := dec.Decode(&wf); err != nil {
			bad(name, "%v", err)
			continue
		}
		wfs[name] = &wf
	}
	commands := commandFlags()
	entryFields := jsonFields(reflect.TypeFor[fleet.Entry]())
	for _, name := range slices.Sorted(mapKeys(wfs)) {
		wf := wfs[name]
		if wf.Name == "" || len(wf.Jobs) == 0 {
			bad(name, "a workflow needs a name and jobs")
		}
		if wf.Defaults.Run.Shell != "bash" {
			// Unset, GitHub runs bash -e without pipefail: go test | tee
			// would pass whatever the tests did.
			bad(name, "defaults.run.shell: want bash (bash -eo pipefail), so that a failure in a pipe fails the step")
		}
		inputs := map[string]bool{}
		for _, tr := range []*ghTrigger{wf.On.WorkflowDispatch, wf.On.WorkflowCall} {
			if tr != nil {
				for k, in := range tr.Inputs {
					inputs[k] = true
					if !slices.Contains([]string{"string", "number", "boolean", "choice", "environment"}, in.Type) {
						bad(name, "input %s: type %q", k, in.Type)
					}
				}
			}
		}
		for _, s := range wf.On.Schedule {
			if c, _ := s["cron"].(string); len(strings.Fields(c)) != 5 {
				bad(name, "schedule cron %q: want five fields", c)
			}
		}
		for _, jn := range slices.Sorted(mapKeys(wf.Jobs)) {
			j := wf.Jobs[jn]
			where := name + ": job " + jn
			for _, n := range j.Needs {
				if wf.Jobs[n] == nil {
					bad(where, "needs %q, which is no job of the workflow", n)
				}
			}
			matrixKeys := map[string]bool{}
			if j.Strategy != nil {
				switch m := j.Strategy.Matrix.(type) {
				case map[string]any:
					for k := range m {
						matrixKeys[k] = true
					}
				case string:
					// A matrix of profile-model matrix: its entries' fields.
					for _, f := range entryFields {
						matrixKeys[f] = true
					}
				}
			}
			refs := refContext{file: name, job: jn, wf: wf, inputs: inputs, matrix: matrixKeys, needs: j.Needs}
			check := func(where, s string, implicit bool) {
				for _, err := range refs.check(s, implicit) {
					bad(where, "%v", err)
				}
			}
			check(where+" if", j.If, true)
			check(where+" name", j.Name, false)
			walkStrings(j.RunsOn, func(s string) { check(where+" runs-on", s, false) })
			walkStrings(j.TimeoutMinutes, func(s string) { check(where+" timeout-minutes", s, false) })
			walkStrings(j.With, func(s string) { check(where+" with", s, false) })
			if j.Strategy != nil {
				walkStrings(j.Strategy.Matrix, func(s string) { check(where+" matrix", s, false) })
			}
			if j.Concurrency != nil {
				check(where+" concurrency", j.Concurrency.Group, false)
			}
			if j.Uses != "" {
				errs = append(errs, checkCall(name, jn, j, wfs)...)
				continue
			}
			if j.RunsOn == nil || len(j.Steps) == 0 {
				bad(where, "a job needs runs-on and steps (or uses, for a reusable workflow)")
			}
			for i, st := range j.Steps {
				sw := fmt.Sprintf("%s step %d (%s)", where, i+1, cmpOr(st.Name, st.ID, st.Uses))
				if (st.Run == "") == (st.Uses == "") {
					bad(sw, "a step has either run or uses")
				}
				if st.Uses != "" && !regexp.MustCompile(`^[\w.-]+/[\w.-]+@v\d+$`).MatchString(st.Uses) {
					bad(sw, "uses %q: pin an action to its major version (owner/name@vN)", st.Uses)
				}
				refs.steps = stepIDs(j.Steps[:i])
				check(sw+" if", st.If, true)
				walkStrings(st.With, func(s string) { check(sw+" with", s, false) })
				walkStrings(st.Env, func(s string) { check(sw+" env", s, false) })
				check(sw+" run", st.Run, false)
				if st.Run != "" {
					for _, err := range checkScript(st.Run, commands) {
						bad(sw, "%v", err)
					}
				}
			}
			refs.steps = stepIDs(j.Steps)
			walkStrings(j.Outputs, func(s string) { check(where+" outputs", s, false) })
		}
	}
	errs = append(errs, checkArtifacts(wfs)...)
	return errs
}

func cmpOr(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func stepIDs(steps []ghStep) map[string]bool {
	ids := map[string]bool{}
	for _, s := range steps {
		if s.ID != "" {
			ids[s.ID] = true
		}
	}
	return ids
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// walkStrings calls fn with every string in a decoded YAML value.
func walkStrings(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
	case []any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	case map[string]any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	case map[string]string:
		for _, e := range x {
			fn(e)
		}
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// refContext is what an expression may refer to where it stands.
type refContext struct {
	file, job string
	wf        *ghWorkflow
	inputs    map[string]bool
	matrix    map[string]bool
	needs     []string
	steps     map[string]bool // ids of the steps before
}

var (
	exprRe     = regexp.MustCompile(`\$\{\{(.*?)\}\}`)
	quotedRe   = regexp.MustCompile(`'[^']*'`)
	refRe      = regexp.MustCompile(`\b([a-z]+)((?:\.[\w-]+)+)`)
	callRe     = regexp.MustCompile(`\b([A-Za-z]+)\(`)
	contexts   = []string{"github", "env", "vars", "job", "jobs", "steps", "runner", "secrets", "strategy", "matrix", "needs", "inputs"}
	exprFuncs  = []string{"always", "success", "failure", "cancelled", "fromJSON", "toJSON", "format", "join", "contains", "startsWith", "endsWith", "hashFiles"}
	unexpanded = regexp.MustCompile(`\$\{\{|\}\}`)
)

// check checks the expressions of s: ${{ }} ones, or all of s when
// implicit (an if:).
func (c *refContext) check(s string, implicit bool) []error {
	var exprs []string
	for _, m := range exprRe.FindAllStringSubmatch(s, -1) {
		exprs = append(exprs, m[1])
	}
	if rest := exprRe.ReplaceAllString(s, ""); unexpanded.MatchString(rest) {
		return []error{fmt.Errorf("unbalanced ${{ }} in %q", s)}
	} else if implicit && strings.TrimSpace(rest) != "" {
		exprs = append(exprs, rest)
	}
	var errs []error
	for _, e := range exprs {
		e = quotedRe.ReplaceAllString(e, "''")
		for _, m := range callRe.FindAllStringSubmatch(e, -1) {
			if !slices.Contains(exprFuncs, m[1]) {
				errs = append(errs, fmt.Errorf("expression %q: no function %s", e, m[1]))
			}
		}
		for _, m := range refRe.FindAllStringSubmatch(e, -1) {
			parts := strings.Split(m[2], ".")[1:]
			if err := c.ref(m[1], parts); err != nil {
				errs = append(errs, fmt.Errorf("expression %q: %v", strings.TrimSpace(e), err))
			}
		}
	}
	return errs
}

func (c *refContext) ref(ctx string, parts []string) error {
	if !slices.Contains(contexts, ctx) {
		return fmt.Errorf("no context %s", ctx)
	}
	switch ctx {
	case "matrix":
		if !c.matrix[parts[0]] {
			return fmt.Errorf("matrix.%s: the job's matrix has no such field (it has %v)", parts[0], slices.Sorted(mapKeys(c.matrix)))
		}
	case "inputs":
		if !c.inputs[parts[0]] {
			return fmt.Errorf("inputs.%s is not declared", parts[0])
		}
	case "needs":
		if !slices.Contains(c.needs, parts[0]) {
			return fmt.Errorf("needs.%s: job %s does not need %s", parts[0], c.job, parts[0])
		}
		if len(parts) >= 3 && parts[1] == "outputs" {
			if _, ok := c.wf.Jobs[parts[0]].Outputs[parts[2]]; !ok {
				return fmt.Errorf("needs.%s.outputs.%s: job %s has no such output", parts[0], parts[2], parts[0])
			}
		} else if len(parts) < 2 || parts[1] != "result" && parts[1] != "outputs" {
			return fmt.Errorf("needs.%s: want .result or .outputs.NAME", parts[0])
		}
	case "steps":
		if !c.steps[parts[0]] {
			return fmt.Errorf("steps.%s: no earlier step of job %s has that id", parts[0], c.job)
		}
	}
	return nil
}

// checkCall checks a job that calls a reusable workflow of the set.
func checkCall(file, jn string, j *ghJob, wfs map[string]*ghWorkflow) []error {
	target, ok := strings.CutPrefix(j.Uses, "./.github/workflows/")
	callee := wfs[target]
	if !ok || callee == nil || callee.On.WorkflowCall == nil {
		return []error{fmt.Errorf("%s: job %s: uses %s, which is no reusable workflow (on: workflow_call) of the checked files", file, jn, j.Uses)}
	}
	var errs []error
	for k := range j.With {
		if _, ok := callee.On.WorkflowCall.Inputs[k]; !ok {
			errs = append(errs, fmt.Errorf("%s: job %s: with.%s: %s has no such input", file, jn, k, target))
		}
	}
	for k, in := range callee.On.WorkflowCall.Inputs {
		if _, ok := j.With[k]; in.Required && !ok {
			errs = append(errs, fmt.Errorf("%s: job %s: %s requires input %s", file, jn, target, k))
		}
	}
	return errs
}

// commandFlags are profile-model's commands and the flags each has, read
// from their -h as a user would.
func commandFlags() map[string][]string {
	defined := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9_-]*)`)
	out := map[string][]string{}
	for _, c := range commands() {
		var o, e bytes.Buffer
		_ = run(context.Background(), []string{c.name, "-h"}, &o, &e)
		for _, m := range defined.FindAllStringSubmatch(o.String()+e.String(), -1) {
			out[c.name] = append(out[c.name], m[1])
		}
		if out[c.name] == nil {
			out[c.name] = []string{}
		}
	}
	return out
}

var (
	pmCallRe = regexp.MustCompile(`profile-model"?\s+([a-z][\w-]*)`)
	flagRe   = regexp.MustCompile(`(?:^|\s|\()--([a-z][\w-]*)`)
)

// checkScript checks a run script: its shell syntax, and that the
// profile-model commands it calls exist and have the flags given on their
// lines (and in the args arrays built for them).
func checkScript(script string, commands map[string][]string) []error {
	var errs []error
	plain := exprRe.ReplaceAllString(script, "X")
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(plain)
	if out, err := cmd.CombinedOutput(); err != nil {
		errs = append(errs, fmt.Errorf("bash -n: %v: %s", err, out))
	}
	var called []string
	for _, m := range pmCallRe.FindAllStringSubmatch(plain, -1) {
		if _, ok := commands[m[1]]; !ok {
			errs = append(errs, fmt.Errorf("profile-model %s: no such command", m[1]))
			continue
		}
		called = append(called, m[1])
	}
	if len(called) == 0 {
		return errs
	}
	for _, line := range strings.Split(plain, "\n") {
		if !strings.Contains(line, "profile-model ") && !strings.Contains(line, "args=(") && !strings.Contains(line, "args+=(") {
			continue
		}
		for _, m := range flagRe.FindAllStringSubmatch(line, -1) {
			if !slices.ContainsFunc(called, func(c string) bool { return slices.Contains(commands[c], m[1]) }) {
				errs = append(errs, fmt.Errorf("--%s: no flag of profile-model %s", m[1], strings.Join(called, ", ")))
			}
		}
	}
	return errs
}

// checkArtifacts: every artifact a job downloads by pattern is one some
// job uploads.
func checkArtifacts(wfs map[string]*ghWorkflow) []error {
	var uploads []string
	type download struct{ where, pattern string }
	var downloads []download
	for _, wn := range slices.Sorted(mapKeys(wfs)) {
		for _, jn := range slices.Sorted(mapKeys(wfs[wn].Jobs)) {
			for _, st := range wfs[wn].Jobs[jn].Steps {
				action, _, _ := strings.Cut(st.Uses, "@")
				switch action {
				case "actions/upload-artifact":
					n, _ := st.With["name"].(string)
					uploads = append(uploads, exprRe.ReplaceAllString(n, "x"))
				case "actions/download-artifact":
					p, _ := st.With["pattern"].(string)
					downloads = append(downloads, download{wn + ": job " + jn, p})
				}
			}
		}
	}
	var errs []error
	for _, d := range downloads {
		if !slices.ContainsFunc(uploads, func(u string) bool { ok, _ := path.Match(d.pattern, u); return ok }) {
			errs = append(errs, fmt.Errorf("%s: downloads artifacts %q, and no job uploads one of that name (uploads: %v)", d.where, d.pattern, uploads))
		}
	}
	return errs
}

func readWorkflows(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, n := range fleetWorkflows {
		data, err := os.ReadFile(filepath.Join(workflowDir, n))
		require.NoError(t, err)
		files[n] = data
	}
	return files
}

// TestFleetWorkflows: the workflows pass every check.
func TestFleetWorkflows(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH: the workflow scripts' syntax cannot be checked")
	}
	files := readWorkflows(t)
	require.Empty(t, errors.Join(checkWorkflows(files)...))
	// What the fleet relies on, beyond well-formedness.
	var wf ghWorkflow
	require.NoError(t, yaml.Unmarshal(files["gpu-sweeps.yml"], &wf))
	require.NotNil(t, wf.On.WorkflowDispatch, "manual dispatch")
	require.NotEmpty(t, wf.On.Schedule, "nightly schedule")
	require.NotNil(t, wf.On.Push, "release tags")
	require.NotEmpty(t, wf.On.Push.Tags, "release tags")
	require.Equal(t, []string{"plan", "sweeps"}, []string(wf.Jobs["merge"].Needs))
	require.Contains(t, string(files["gpu-sweep-jobs.yml"]), "name: result-${{ matrix.sweep }}")
	require.Contains(t, string(files["gpu-sweep-jobs.yml"]), "name: traces-${{ matrix.sweep }}")
}

// TestFleetWorkflowsBroken: each deliberate breakage of a copy is caught,
// naming what broke.
func TestFleetWorkflowsBroken(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH: the workflow scripts' syntax cannot be checked")
	}
	files := readWorkflows(t)
	cases := []struct {
		file, old, new, want string
	}{
		{"gpu-sweep-jobs.yml", "RUN: ${{ matrix.run }}", "RUN: ${{ matrix.rnu }}", "matrix.rnu"},
		{"gpu-sweeps.yml", "needs: [plan, sweeps]", "needs: [plan, sweep]", `needs "sweep"`},
		{"gpu-sweeps.yml", "merge --out merged", "merge --output merged", "--output"},
		{"gpu-sweeps.yml", `matrix "${args[@]}"`, `matrices "${args[@]}"`, "profile-model matrices"},
		{"gpu-sweeps.yml", "--sim-only", "--gpu-less", "--gpu-less"},
		{"gpu-sweeps.yml", "if: steps.baseline.outputs.run_id != ''\n        uses", "if: steps.basline.outputs.run_id != ''\n        uses", "steps.basline"},
		{"gpu-sweeps.yml", `cron: "17 2 * * *"`, `cron: "17 2 * *"`, "five fields"},
		{"gpu-sweeps.yml", "then count=6; fi", "then count=6;", "bash -n"},
		{"gpu-sweeps.yml", "      matrix: ${{ toJSON(matrix.chunk) }}", "      matrx: ${{ toJSON(matrix.chunk) }}", "with.matrx"},
		{"gpu-sweeps.yml", "    runs-on: ubuntu-latest\n    outputs", "    runs_on: ubuntu-latest\n    outputs", "runs_on"},
		{"gpu-sweeps.yml", "needs.plan.outputs.count", "needs.plan.outputs.counts", "no such output"},
		{"gpu-sweeps.yml", "uses: actions/checkout@v4", "uses: actions/checkout@main", "pin an action"},
		{"gpu-sweep-jobs.yml", "name: result-${{ matrix.sweep }}", "name: results-${{ matrix.sweep }}", "no job uploads"},
		{"gpu-sweep-jobs.yml", "    shell: bash\n", "    shell: sh\n", "pipefail"},
		{"gpu-sweep-jobs.yml", `profile-model" report`, `profile-model" reprot`, "profile-model reprot"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			t.Parallel()
			broken := maps2(files)
			require.Contains(t, string(broken[c.file]), c.old, "the test's breakage no longer applies to %s", c.file)
			broken[c.file] = []byte(strings.Replace(string(broken[c.file]), c.old, c.new, 1))
			err := errors.Join(checkWorkflows(broken)...)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

func maps2(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = slices.Clone(v)
	}
	return out
}
