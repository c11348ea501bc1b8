package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// Every registered class has its constant in types.go, named from its type
// (turn.submitted: TypeTurnSubmitted), and every constant is a class.
func TestTypeConstantsAreTheClasses(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			v, err := strconv.Unquote(vs.Values[0].(*ast.BasicLit).Value)
			if err != nil {
				t.Fatal(err)
			}
			consts[vs.Names[0].Name] = v
		}
	}
	for _, c := range Classes() {
		name := constName(c.Type)
		if got, ok := consts[name]; !ok || got != c.Type {
			t.Errorf("class %s: constant %s = %q, want %q", c.Type, name, got, c.Type)
		}
	}
	for name, typ := range consts {
		if _, ok := Lookup(typ); !ok {
			t.Errorf("constant %s = %q is not a registered class", name, typ)
		}
	}
}

func constName(typ string) string {
	var b strings.Builder
	b.WriteString("Type")
	for _, p := range strings.FieldsFunc(typ, func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}
