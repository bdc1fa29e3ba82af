package gatetable

import (
	"fmt"
	"strings"
)

// The markers around the generated table in docs/gate.md.
const (
	DocBegin = "<!-- gate table: generated from internal/judge/gatetable (go generate ./internal/judge/gatetable); do not edit -->"
	DocEnd   = "<!-- end of generated gate table -->"
)

//go:generate go run ./gendoc ../../../docs/gate.md

// MarkdownTable is docs/gate.md's table of declared gates, one row per
// entry of All, in the summary's order.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| gate | swarm flag | reads | window | timing | passes when |\n|---|---|---|---|---|---|\n")
	for _, g := range table {
		flag := "—"
		if g.Flag != "" {
			flag = "`--" + g.Flag + "`"
		}
		timing := ""
		if g.Timing {
			timing = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s | %s |\n", g.Name, flag, g.Metric, g.Window.Doc(), timing, g.passesWhen())
	}
	return b.String()
}

// passesWhen is the bound in words, then the entry's Doc, then whether
// the gate can end a leg early.
func (g Gate) passesWhen() string {
	s := g.passesWhenBound()
	if g.CanAbort() {
		s += "; can end a leg early (`abort_on_breach`)"
	}
	return s
}

func (g Gate) passesWhenBound() string {
	var bound string
	switch {
	case g.Judge != nil:
		bound = ""
	case g.Source == SweepEntities:
		bound = g.Dir.Symbol()
	default:
		bound = g.Dir.Symbol() + " threshold"
		if g.Tier == StrictOnly {
			bound += " (without a declared level: hard only in the strict tier)"
		}
	}
	switch {
	case bound == "":
		return g.Doc
	case g.Doc == "":
		return bound
	case g.Source == SweepEntities:
		return bound + " " + g.Doc
	case strings.HasPrefix(g.Doc, "("):
		return bound + " " + g.Doc
	}
	return bound + "; " + g.Doc
}

// ReplaceDocTable returns doc with the text between DocBegin and DocEnd
// replaced by MarkdownTable; an error when the markers are missing.
func ReplaceDocTable(doc string) (string, error) {
	i := strings.Index(doc, DocBegin)
	j := strings.Index(doc, DocEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("markers %q and %q not found in order", DocBegin, DocEnd)
	}
	return doc[:i+len(DocBegin)] + "\n" + MarkdownTable() + doc[j:], nil
}
