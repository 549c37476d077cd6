package broadcast_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// Every exported name of the package (types, functions, methods, constants, variables and
// struct fields) has a comment of its own, in Go's words: none sends the reader to the C header.
func TestEveryExportedNameIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	pkg := pkgs["broadcast"]
	if pkg == nil {
		t.Fatal("package broadcast not found")
	}
	undocumented := func(pos token.Pos, what string) {
		t.Errorf("%s: %s has no comment", fset.Position(pos), what)
	}
	has := func(groups ...*ast.CommentGroup) bool {
		for _, g := range groups {
			if g != nil && strings.TrimSpace(g.Text()) != "" {
				return true
			}
		}
		return false
	}
	checked := 0
	for name, file := range pkg.Files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		for _, c := range file.Comments {
			if strings.Contains(c.Text(), "include/broadcast.h") {
				t.Errorf("%s: a comment refers to the C header", fset.Position(c.Pos()))
			}
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if star, ok := recv.(*ast.StarExpr); ok {
						recv = star.X
					}
					if id, ok := recv.(*ast.Ident); ok && !id.IsExported() {
						continue
					}
				}
				checked++
				if !has(d.Doc) {
					undocumented(d.Pos(), d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						checked++
						if !has(s.Doc, d.Doc) {
							undocumented(s.Pos(), s.Name.Name)
						}
						st, ok := s.Type.(*ast.StructType)
						if !ok {
							continue
						}
						for _, f := range st.Fields.List {
							for _, n := range f.Names {
								if n.IsExported() {
									checked++
									if !has(f.Doc, f.Comment) {
										undocumented(n.Pos(), s.Name.Name+"."+n.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							checked++
							// A constant or variable needs its own comment; one alone in its
							// declaration may share the declaration's.
							if !has(s.Doc, s.Comment) && !(len(d.Specs) == 1 && has(d.Doc)) {
								undocumented(n.Pos(), n.Name)
							}
						}
					}
				}
			}
		}
	}
	if checked < 150 {
		t.Errorf("only %d exported names found", checked)
	}
}
