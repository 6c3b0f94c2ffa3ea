package diag

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCodesDocumented: every warning code declared in this package has a
// row in docs/analysis.md's table of codes, so a new code cannot ship
// without its meaning written down.
func TestCodesDocumented(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "diag.go", nil, 0)
	require.NoError(t, err)
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil || len(vs.Values) != 1 {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "Code" {
			lit, ok := vs.Values[0].(*ast.BasicLit)
			require.True(t, ok, "code %s is a string literal", vs.Names[0].Name)
			s, err := strconv.Unquote(lit.Value)
			require.NoError(t, err)
			codes = append(codes, s)
		}
		return true
	})
	require.Greater(t, len(codes), 10, "the codes were found in diag.go")
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "analysis.md"))
	require.NoError(t, err)
	for _, c := range codes {
		require.True(t, strings.Contains(string(doc), "| `"+c+"` |"), "docs/analysis.md has no table row for warning code %q", c)
	}
}
