package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

func TestFunctionsAndReport(t *testing.T) {
	src := "package p\n\nfunc a() {\n}\n\ntype T struct{}\n\nfunc (t *T) b() {\n\t_ = 1\n\t_ = 2\n}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	fns := functions(fset, "p.go", f)
	if len(fns) != 2 || fns[0].lines != 2 || fns[1].lines != 4 || fns[1].name != "p.go:T.b" {
		t.Fatalf("functions = %+v", fns)
	}
	for _, c := range []struct {
		over int
		want string
	}{
		{3, "functions 2  median 2  p90 4  max 4 lines  over 3: 1\n"},
		{4, "functions 2  median 2  p90 4  max 4 lines  over 4: 0\n"},
		{1, "functions 2  median 2  p90 4  max 4 lines  over 1: 2\n"},
	} {
		var out bytes.Buffer
		if err := report(&out, fns, 1, c.over); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), c.want) {
			t.Errorf("over %d: report = %q, want it to start %q", c.over, out.String(), c.want)
		}
	}
}

func TestRank(t *testing.T) {
	v := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		q    float64
		want int
	}{{0.5, 5}, {0.9, 9}, {1, 10}, {0, 1}} {
		if got := rank(v, c.q); got != c.want {
			t.Errorf("rank(%v) = %d, want %d", c.q, got, c.want)
		}
	}
}
