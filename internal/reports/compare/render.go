package compare

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
)

// cells formats a row for display.
func (r Row) cells() []string {
	if r.A == nil && r.B == nil && (r.AText != "" || r.BText != "") {
		return []string{r.Metric, r.AText, r.BText, "", ""}
	}
	num := func(v *float64) string {
		if v == nil {
			return "missing"
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	delta, pct := "", ""
	if d := r.Delta(); d != nil {
		delta = fmt.Sprintf("%+.2f", *d)
	}
	if p := r.DeltaPct(); p != nil {
		pct = fmt.Sprintf("%+.1f%%", *p)
	}
	return []string{r.Metric, num(r.A), num(r.B), delta, pct}
}

var header = []any{"metric", "A", "B", "delta (B−A)", "delta %"}

// WriteTable prints the comparison as one terminal table per leg.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "A: %s\nB: %s\n", r.A, r.B)
	for _, l := range r.Legs {
		if l.Refused != "" {
			fmt.Fprintf(w, "\nleg %s: not compared: %s\n", l.ID, l.Refused)
			continue
		}
		fmt.Fprintf(w, "\nleg %s\n", l.ID)
		if l.Note != "" {
			fmt.Fprintf(w, "note: %s\n", l.Note)
		}
		if err := writeRows(tablewriter.NewWriter(w), l.Rows); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes the comparison as Markdown: a section per leg.
func (r *Result) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "# scalegate compare\n\n- A: `%s`\n- B: `%s`\n", r.A, r.B)
	for _, l := range r.Legs {
		fmt.Fprintf(w, "\n## Leg %s\n\n", l.ID)
		if l.Refused != "" {
			fmt.Fprintf(w, "**Not compared:** %s\n", l.Refused)
			continue
		}
		if l.Note != "" {
			fmt.Fprintf(w, "> %s\n\n", l.Note)
		}
		t := tablewriter.NewTable(w, tablewriter.WithRenderer(renderer.NewMarkdown()))
		if err := writeRows(t, l.Rows); err != nil {
			return err
		}
	}
	return nil
}

func writeRows(t *tablewriter.Table, rows []Row) error {
	t.Header(header...)
	for _, row := range rows {
		c := row.cells()
		for i := range c {
			// A pipe would split a Markdown cell.
			c[i] = strings.ReplaceAll(c[i], "|", "/")
		}
		if err := t.Append(c); err != nil {
			return err
		}
	}
	return t.Render()
}
