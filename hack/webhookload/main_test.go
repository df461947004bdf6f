package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMeasuresEveryWebhookOfTheServer checks that the command knows the webhooks the
// resource-manager server serves, runs on a tiny load and prints a row per webhook and mode.
// It checks no timing: the numbers are the command's output, not a test's verdict.
func TestMeasuresEveryWebhookOfTheServer(t *testing.T) {
	assert.Equal(t, constructorList(t, "../../webhooks/resource-manager/main.go", "webhooks"), constructorList(t, "main.go", "constructors"),
		"hack/webhookload measures other webhooks than webhooks/resource-manager serves")

	var out bytes.Buffer
	require.NoError(t, run(options{requests: 3, concurrency: 2, timeout: defaultTimeout}, &out))
	for _, c := range constructors {
		rows := 0
		for line := range strings.Lines(out.String()) {
			if fields := strings.Fields(line); len(fields) > 0 && fields[0] == c.Name {
				rows++
			}
		}
		assert.Equal(t, 2, rows, "rows of %s (sequential and concurrent) in:\n%s", c.Name, out.String())
	}
}

// constructorList is the elements (e.g. "seccompprofile.Webhook") of the composite literal
// assigned to the package-level variable name in file.
func constructorList(t *testing.T, file, name string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var elements []string
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != name || len(spec.Values) != 1 {
			return true
		}
		lit, ok := spec.Values[0].(*ast.CompositeLit)
		require.True(t, ok, "%s in %s is no composite literal", name, file)
		for _, e := range lit.Elts {
			sel, ok := e.(*ast.SelectorExpr)
			require.True(t, ok, "an element of %s in %s is no pkg.Webhook", name, file)
			elements = append(elements, sel.X.(*ast.Ident).Name+"."+sel.Sel.Name)
		}
		return false
	})
	require.NotEmpty(t, elements, "no %s in %s", name, file)
	return elements
}
