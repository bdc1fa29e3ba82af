// Command funcsize prints the size distribution of the Go functions under
// the given directories. They default to "."; it reports count, median,
// p90 and max lines per function (from `func` to the closing brace, its
// doc comment not counted), how many are over -over lines (50: the
// project's "small functions" rule), tests and generated files left out,
// and the largest few by name. It is how the structure work measures whether
// functions got smaller: run it before and after a refactor and compare.
//
//	go run ./tools/funcsize ./internal ./cmd
//	go run ./tools/funcsize -top 20 -over 50 ./internal
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fn is one function and its length in lines (signature to closing brace).
type fn struct {
	name  string
	lines int
}

func main() {
	top := flag.Int("top", 5, "list the N largest functions")
	over := flag.Int("over", 50, "count the functions longer than N lines")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	var all []fn
	for _, d := range dirs {
		fns, err := collect(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, "funcsize:", err)
			os.Exit(1)
		}
		all = append(all, fns...)
	}
	if err := report(os.Stdout, all, *top, *over); err != nil {
		fmt.Fprintln(os.Stderr, "funcsize:", err)
		os.Exit(1)
	}
}

// collect parses every non-test Go file below dir.
func collect(dir string) ([]fn, error) {
	var out []fn
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != dir {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		out = append(out, functions(fset, path, f)...)
		return nil
	})
	return out, err
}

// functions lists the declared functions and methods of one file.
func functions(fset *token.FileSet, path string, f *ast.File) []fn {
	var out []fn
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) > 0 {
			name = recvName(fd.Recv.List[0].Type) + "." + name
		}
		n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		out = append(out, fn{name: filepath.ToSlash(path) + ":" + name, lines: n})
	}
	return out
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// report prints the distribution: nearest-rank percentiles over the
// lengths, and how many are longer than over lines.
func report(w io.Writer, fns []fn, top, over int) error {
	if len(fns) == 0 {
		return fmt.Errorf("no functions found")
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].lines > fns[j].lines })
	lens := make([]int, len(fns))
	for i, f := range fns {
		lens[len(fns)-1-i] = f.lines
	}
	long := 0
	for _, n := range lens {
		if n > over {
			long++
		}
	}
	fmt.Fprintf(w, "functions %d  median %d  p90 %d  max %d lines  over %d: %d\n", len(lens), rank(lens, 0.5), rank(lens, 0.9), lens[len(lens)-1], over, long)
	for i := 0; i < top && i < len(fns); i++ {
		fmt.Fprintf(w, "  %4d  %s\n", fns[i].lines, fns[i].name)
	}
	return nil
}

// rank is the nearest-rank percentile of sorted ascending values.
func rank(sorted []int, q float64) int {
	i := int(q*float64(len(sorted))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}
