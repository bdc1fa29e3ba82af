package trace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/guard/boundedfile/boundedfiletest"
)

// TestReadFileRefusesHostileFiles is the acceptance test of the trace
// reader: a /dev/zero symlink (git can commit one), a FIFO and a 300 MB
// file are each refused within 2 s with less than 64 MB of growth.
func TestReadFileRefusesHostileFiles(t *testing.T) {
	cases := boundedfiletest.Files(t, t.TempDir(), "session.flit")
	boundedfiletest.Refuses(t, cases, func(p string) error {
		_, err := ReadFile(context.Background(), p)
		return err
	})
}

// TestSetBudget: files that each fit MaxFileBytes but together exceed
// MaxSetBytes are refused at the file that crosses it, naming the cap.
func TestSetBudget(t *testing.T) {
	dir := t.TempDir()
	budget := NewSetBudget("the trace files of " + dir)
	for i := range 5 {
		p := filepath.Join(dir, string(rune('a'+i))+".flit")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(AppendHeader(nil, 60))
		f.Truncate(60 << 20) // sparse: 60 MiB of zero records
		f.Close()
		_, err = ReadFileBudget(context.Background(), p, budget)
		if i < 4 && err != nil {
			t.Fatalf("file %d: %v", i, err)
		}
		if i == 4 {
			if err == nil || !strings.Contains(err.Error(), "together exceed the 268435456-byte cap (256 MiB)") || !strings.Contains(err.Error(), p) {
				t.Fatalf("fifth 60 MiB file: %v, want the set's cap named", err)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	nan := float32(0)
	nan /= nan
	for _, tc := range []struct {
		name string
		tr   Trace
		want string
	}{
		{"ok", Trace{Header: Header{TickRate: 60}, Records: []Record{{ServerTick: 1}, {ServerTick: 1}, {ServerTick: 2}}}, ""},
		{"empty", Trace{Header: Header{TickRate: 60}}, "no records (header only)"},
		{"rate 0", Trace{Records: []Record{{}}}, "tick rate 0"},
		{"NaN", Trace{Header: Header{TickRate: 60}, Records: []Record{{}, {Aileron: nan}}}, "record 1: aileron is NaN"},
		{"backwards", Trace{Header: Header{TickRate: 60}, Records: []Record{{ServerTick: 9}, {ServerTick: 8}}}, "record 1: server tick 8 is before the previous record's 9"},
	} {
		err := tc.tr.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
