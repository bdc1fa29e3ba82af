package rundir

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"os"
	"strings"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// MatrixFile is the sweep matrix's file in the run directory.
const MatrixFile = "matrix.csv"

// MatrixHeader is matrix.csv's header: the leg, its pattern, its value on
// each sweep axis, its verdict, then one column per figure (named as in
// the gate table, unit in the figure's title).
func (m *SweepMatrix) MatrixHeader() []string {
	head := append([]string{"leg", "pattern"}, m.Axes...)
	head = append(head, "verdict")
	for _, c := range m.Columns {
		head = append(head, c.Name)
	}
	return head
}

// WriteMatrixCSV writes the sweep matrix, one row per leg. An empty figure
// cell is a figure the leg did not measure (not zero).
func WriteMatrixCSV(path string, m *SweepMatrix) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("%s: %w", MatrixFile, err)
	}
	w := csv.NewWriter(bufio.NewWriter(f))
	_ = w.Write(m.MatrixHeader())
	for _, r := range m.Rows {
		rec := append([]string{r.LegID, r.Pattern}, r.Point...)
		rec = append(rec, string(r.Verdict))
		for _, v := range r.Values {
			rec = append(rec, optCSV(v))
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", MatrixFile, err)
	}
	return f.Close()
}

// matrixMarkdown renders the matrix for summary.md: a row per sweep point,
// phase means first, then the whole tick, the world and the CPU.
func matrixMarkdown(m *SweepMatrix) string {
	if m == nil || len(m.Rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("### sweep matrix\n\n")
	head := append([]string{"leg"}, m.Axes...)
	for _, c := range m.Columns {
		t := c.Title
		if c.Unit != "" && !strings.Contains(t, c.Unit) {
			t += " " + c.Unit
		}
		head = append(head, t)
	}
	head = append(head, "verdict")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		if i == 0 || i == len(head)-1 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range m.Rows {
		cells := []string{safetext.MarkdownInlineCode(r.LegID)}
		for _, v := range r.Point {
			cells = append(cells, safetext.MarkdownCell(v))
		}
		for _, v := range r.Values {
			cells = append(cells, optNum(v))
		}
		cells = append(cells, string(r.Verdict))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	fmt.Fprintf(&b, "\nPhase columns are each tick phase's mean ms over the server's last window (%s); `—` is a figure the leg did not measure. The same rows are in `%s`.\n\n",
		phaseNames(m), MatrixFile)
	return b.String()
}

// phaseNames lists the matrix's phase columns.
func phaseNames(m *SweepMatrix) string {
	var names []string
	for _, c := range m.Columns {
		if c.OwnPhase {
			names = append(names, c.Title+" (the profile's own)")
			continue
		}
		for _, f := range gatetable.TickPhases() {
			if f.Name == c.Name {
				names = append(names, f.Title)
			}
		}
	}
	return strings.Join(names, ", ")
}
