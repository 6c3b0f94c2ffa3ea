package main

import (
	"bytes"
	"cmp"
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

// The fleet's GitHub Actions workflows are checked by actionlint
// (actionlint_test.go) for what GitHub would reject, and here for what
// actionlint cannot know: the fields of the matrices that profile-model
// matrix prints, the profile-model commands and flags the scripts call,
// the scripts' shell syntax (bash -n), that the artifacts the merge job
// downloads are uploaded, that a failure in a pipe fails its step, and
// that actions are pinned to a major version.

const workflowDir = "../../.github/workflows"

// fleetWorkflows are the workflow files the fleet consists of.
var fleetWorkflows = []string{"gpu-sweeps.yml", "gpu-sweep-jobs.yml"}

// ghWorkflow is what the checks read of a workflow.
type ghWorkflow struct {
	On struct {
		WorkflowDispatch *struct{}        `yaml:"workflow_dispatch"`
		Schedule         []map[string]any `yaml:"schedule"`
		Push             *struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	} `yaml:"on"`
	Defaults struct {
		Run struct {
			Shell string `yaml:"shell"`
		} `yaml:"run"`
	} `yaml:"defaults"`
	Jobs map[string]*ghJob `yaml:"jobs"`
}

type ghJob struct {
	Name           string `yaml:"name"`
	Needs          ghList `yaml:"needs"`
	RunsOn         any    `yaml:"runs-on"`
	TimeoutMinutes any    `yaml:"timeout-minutes"`
	Concurrency    *struct {
		Group string `yaml:"group"`
	} `yaml:"concurrency"`
	Strategy *struct {
		Matrix any `yaml:"matrix"`
	} `yaml:"strategy"`
	Steps []ghStep `yaml:"steps"`
}

type ghStep struct {
	Name string            `yaml:"name"`
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	With map[string]any    `yaml:"with"`
	Run  string            `yaml:"run"`
	Env  map[string]string `yaml:"env"`
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
		var wf ghWorkflow
		if err := yaml.Unmarshal(files[name], &wf); err != nil {
			bad(name, "%v", err)
			continue
		}
		wfs[name] = &wf
	}
	commands := commandFlags()
	entryFields := jsonFields(reflect.TypeFor[fleet.Entry]())
	for _, name := range slices.Sorted(mapKeys(wfs)) {
		wf := wfs[name]
		if wf.Defaults.Run.Shell != "bash" {
			// Unset, GitHub runs bash -e without pipefail: go test | tee
			// would pass whatever the tests did.
			bad(name, "defaults.run.shell: want bash (bash -eo pipefail), so that a failure in a pipe fails the step")
		}
		for _, jn := range slices.Sorted(mapKeys(wf.Jobs)) {
			j := wf.Jobs[jn]
			where := name + ": job " + jn
			// A matrix that profile-model matrix printed (a string:
			// fromJSON of an input) has its entries' fields, which
			// actionlint cannot know.
			var fields []string
			if j.Strategy != nil {
				if _, ok := j.Strategy.Matrix.(string); ok {
					fields = entryFields
				}
			}
			check := func(where, s string) {
				if fields == nil {
					return
				}
				for _, m := range matrixRefRe.FindAllStringSubmatch(strings.Join(exprsOf(s), " "), -1) {
					if !slices.Contains(fields, m[1]) {
						bad(where, "matrix.%s: profile-model matrix prints no such field (it prints %v)", m[1], fields)
					}
				}
			}
			check(where+" name", j.Name)
			walkStrings(j.RunsOn, func(s string) { check(where+" runs-on", s) })
			walkStrings(j.TimeoutMinutes, func(s string) { check(where+" timeout-minutes", s) })
			if j.Concurrency != nil {
				check(where+" concurrency", j.Concurrency.Group)
			}
			for i, st := range j.Steps {
				sw := fmt.Sprintf("%s step %d (%s)", where, i+1, cmp.Or(st.Name, st.ID, st.Uses))
				if st.Uses != "" && !regexp.MustCompile(`^[\w.-]+/[\w.-]+@v\d+$`).MatchString(st.Uses) {
					bad(sw, "uses %q: pin an action to its major version (owner/name@vN)", st.Uses)
				}
				check(sw+" if", "${{ "+st.If+" }}")
				walkStrings(st.With, func(s string) { check(sw+" with", s) })
				walkStrings(st.Env, func(s string) { check(sw+" env", s) })
				check(sw+" run", st.Run)
				if st.Run != "" {
					for _, err := range checkScript(st.Run, commands) {
						bad(sw, "%v", err)
					}
				}
			}
		}
	}
	errs = append(errs, checkArtifacts(wfs)...)
	return errs
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

var (
	exprRe      = regexp.MustCompile(`\$\{\{(.*?)\}\}`)
	matrixRefRe = regexp.MustCompile(`\bmatrix\.([\w-]+)`)
)

// exprsOf are the ${{ }} expressions of s.
func exprsOf(s string) []string {
	var out []string
	for _, m := range exprRe.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
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
	pmCallRe = regexp.MustCompile(`profile-model"?[ \t]+([a-z][\w-]*)`)
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

// TestFleetWorkflowsBroken: each deliberate breakage of a copy that
// actionlint would pass is caught here, naming what broke.
func TestFleetWorkflowsBroken(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH: the workflow scripts' syntax cannot be checked")
	}
	files := readWorkflows(t)
	cases := []struct {
		file, old, new, want string
	}{
		{"gpu-sweep-jobs.yml", "COMMAND: ${{ matrix.command }}", "COMMAND: ${{ matrix.comand }}", "matrix.comand"},
		{"gpu-sweeps.yml", "merge --out merged", "merge --output merged", "--output"},
		{"gpu-sweeps.yml", `matrix "${args[@]}"`, `matrices "${args[@]}"`, "profile-model matrices"},
		{"gpu-sweeps.yml", "--sim-only", "--gpu-less", "--gpu-less"},
		{"gpu-sweeps.yml", "then count=6; fi", "then count=6;", "bash -n"},
		{"gpu-sweeps.yml", "uses: actions/checkout@v4", "uses: actions/checkout@main", "pin an action"},
		{"gpu-sweep-jobs.yml", "name: result-${{ matrix.sweep }}", "name: results-${{ matrix.sweep }}", "no job uploads"},
		{"gpu-sweep-jobs.yml", "    shell: bash\n", "    shell: sh\n", "pipefail"},
		{"gpu-sweep-jobs.yml", `profile-model report "$dir"`, `profile-model reprot "$dir"`, "profile-model reprot"},
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
