package crashpoint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pointShape is what a crash point's name looks like: three parts.
var pointShape = regexp.MustCompile(`^[a-z][a-z-]*/[a-z][a-z-]*/[a-z][a-z-]*$`)

// literals returns, for every non-test Go file of the module that imports
// this package, the string literals shaped like a point's name, and the
// literal arguments of every crashpoint.Reach call.
func literals(t *testing.T) (shaped, reached map[string][]string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	shaped, reached = map[string][]string{}, map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "vendor" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		imports := false
		for _, imp := range f.Imports {
			if strings.HasSuffix(imp.Path.Value, `/framework/crashpoint"`) {
				imports = true
			}
		}
		if !imports {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if s, err := strconv.Unquote(n.Value); err == nil && pointShape.MatchString(s) {
						shaped[s] = append(shaped[s], rel)
					}
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Reach" {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "crashpoint" || len(n.Args) != 1 {
					return true
				}
				if lit, ok := n.Args[0].(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					reached[s] = append(reached[s], rel)
				} else {
					reached[""] = append(reached[""], rel)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return shaped, reached
}

// Every point the code reaches is declared, and every declared point is
// reached somewhere (by name, or through a helper given its name).
func TestEveryPointReachedIsDeclaredAndEveryDeclaredPointReached(t *testing.T) {
	shaped, reached := literals(t)
	for name, where := range reached {
		if name == "" {
			// A helper reaching a point its caller names: the caller's
			// literal is checked below.
			continue
		}
		if _, ok := Lookup(name); !ok {
			t.Errorf("%s reaches %q, which Points does not declare", strings.Join(where, ", "), name)
		}
	}
	for name, where := range shaped {
		if _, ok := Lookup(name); !ok {
			t.Errorf("%s names %q, shaped like a crash point, which Points does not declare", strings.Join(where, ", "), name)
		}
	}
	for _, p := range Points {
		if len(shaped[p.Name]) == 0 {
			t.Errorf("%s is declared but no code reaches it", p.Name)
		}
	}
	if len(reached) < 10 {
		t.Fatalf("found %d reached points; the walk missed the code", len(reached))
	}
}

// The README's table lists every point, and only those.
func TestTheReadmeListsEveryPoint(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	var listed []string
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		listed = append(listed, m[1])
	}
	var declared []string
	for _, p := range Points {
		declared = append(declared, p.Name)
	}
	if strings.Join(listed, "\n") != strings.Join(declared, "\n") {
		sort.Strings(listed)
		sort.Strings(declared)
		t.Errorf("README.md lists (sorted)\n%s\nPoints declares (sorted)\n%s\n(the README lists them in Points' order)", strings.Join(listed, "\n"), strings.Join(declared, "\n"))
	}
}
