package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"github.com/stretchr/testify/require"
)

// actionlint checks what GitHub itself would reject or misread in the
// workflows: the schema of every key, the types of expressions and of the
// contexts they use (matrix fields among them), needs and outputs, the
// inputs of the reusable workflow called, runner labels, cron syntax and
// the actions' inputs. Its shellcheck and pyflakes passes are off (the
// library runs them only when given their executables): the scripts'
// syntax is checked with bash -n in workflow_test.go, beside the
// profile-model commands and flags they call, which actionlint cannot know.

// lintWorkflows runs actionlint over the workflow files of a repository
// root and returns its findings, one line each.
func lintWorkflows(t *testing.T, root string) []string {
	t.Helper()
	proj, err := actionlint.NewProject(root)
	require.NoError(t, err)
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{WorkingDir: root})
	require.NoError(t, err)
	paths, err := filepath.Glob(filepath.Join(proj.WorkflowsDir(), "*.yml"))
	require.NoError(t, err)
	yaml, err := filepath.Glob(filepath.Join(proj.WorkflowsDir(), "*.yaml"))
	require.NoError(t, err)
	paths = append(paths, yaml...)
	require.NotEmpty(t, paths, "no workflows in %s", proj.WorkflowsDir())
	errs, err := l.LintFiles(paths, proj)
	require.NoError(t, err)
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// TestActionlint: the repository's workflows (every .yml and .yaml of
// .github/workflows) pass actionlint.
func TestActionlint(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	require.Empty(t, lintWorkflows(t, root))
}

// TestActionlintBroken: actionlint catches each deliberate breakage of a
// copy of the workflows, naming the file and what broke.
func TestActionlintBroken(t *testing.T) {
	t.Parallel()
	files := readWorkflows(t)
	cases := []struct {
		name, file, old, new, want string
	}{
		{"undefined needs", "gpu-sweeps.yml", "needs: [plan, sweeps]", "needs: [plan, sweep]", `job "merge" needs job "sweep" which does not exist`},
		{"unknown job key", "gpu-sweeps.yml", "    runs-on: ubuntu-latest\n    outputs", "    runs_on: ubuntu-latest\n    outputs", `unexpected key "runs_on" for "job" section`},
		{"bad cron", "gpu-sweeps.yml", `cron: "17 2 * * *"`, `cron: "17 2 * *"`, "invalid CRON format"},
		{"unknown input of the called workflow", "gpu-sweeps.yml", "      matrix: ${{ toJSON(matrix.chunk) }}", "      matrx: ${{ toJSON(matrix.chunk) }}", `input "matrx" is not defined`},
		{"undefined input", "gpu-sweep-jobs.yml", "COUNT: ${{ inputs.count }}", "COUNT: ${{ inputs.cuont }}", `property "cuont" is not defined`},
		{"unknown step id", "gpu-sweeps.yml", "if: steps.baseline.outputs.run_id != ''\n        uses", "if: steps.basline.outputs.run_id != ''\n        uses", `property "basline" is not defined`},
		{"bad expression", "gpu-sweeps.yml", "${{ fromJSON(needs.plan.outputs.count) }}", "${{ fromJSON(needs.plan.outputs.count }}", "expression"},
		{"undefined output", "gpu-sweeps.yml", "needs.plan.outputs.count", "needs.plan.outputs.counts", `property "counts" is not defined`},
		{"unknown function", "gpu-sweeps.yml", "${{ toJSON(matrix.chunk) }}", "${{ toJSONN(matrix.chunk) }}", `undefined function "toJSONN"`},
		{"matrix field of a literal matrix", "gpu-sweeps.yml", "${{ toJSON(matrix.chunk) }}", "${{ toJSON(matrix.nope) }}", `property "nope" is not defined`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := filepath.Join(root, ".github", "workflows")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for name, data := range files {
				if name == c.file {
					require.Contains(t, string(data), c.old, "the test's breakage no longer applies to %s", name)
					data = []byte(strings.Replace(string(data), c.old, c.new, 1))
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
			}
			errs := strings.Join(lintWorkflows(t, root), "\n")
			require.Contains(t, errs, c.want)
			require.Contains(t, errs, c.file)
		})
	}
}
