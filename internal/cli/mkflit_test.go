package cli

import (
	"encoding/binary"
	"flag"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdMkFlit: mkflit [-magic M] [-version V] [-trailing N] [-gen N [-step S]]
// PATH TICKRATE [TICK,THROTTLE,ELEVATOR,AILERON,RUDDER,BUTTONS]... writes a
// FLIT file (-gen appends N generated records, S ticks apart, every control
// and button moving)
// byte by byte from the layout in docs/trace-format.md, deliberately not
// through internal/load/trace: it is the "foreign recorder" the format promises
// interchange with, and it can write the broken files a user may hold.
func cmdMkFlit(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("mkflit", flag.ContinueOnError)
	magic := fs.String("magic", "FLIT", "")
	version := fs.Int("version", 1, "")
	trailing := fs.Int("trailing", 0, "bytes of a partial last record")
	gen := fs.Int("gen", 0, "generated records to append")
	step := fs.Int("step", 1, "ticks between generated records")
	if neg || fs.Parse(args) != nil || fs.NArg() < 2 {
		ts.Fatalf("usage: mkflit [-magic M] [-version V] [-trailing N] PATH TICKRATE [TICK,THR,ELEV,AIL,RUD,BUTTONS]...")
	}
	rate, err := strconv.ParseUint(fs.Arg(1), 10, 32)
	ts.Check(err)
	b := append([]byte{}, *magic...)
	b = binary.LittleEndian.AppendUint16(b, uint16(*version))
	b = binary.LittleEndian.AppendUint32(b, uint32(rate))
	for _, rec := range fs.Args()[2:] {
		f := strings.Split(rec, ",")
		if len(f) != 6 {
			ts.Fatalf("mkflit: record %q: want TICK,THR,ELEV,AIL,RUD,BUTTONS", rec)
		}
		tick, err := strconv.ParseUint(f[0], 10, 64)
		ts.Check(err)
		b = binary.LittleEndian.AppendUint64(b, tick)
		for _, c := range f[1:5] {
			v, err := strconv.ParseFloat(c, 32)
			ts.Check(err)
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
		}
		btn, err := strconv.ParseUint(f[5], 10, 32)
		ts.Check(err)
		b = binary.LittleEndian.AppendUint32(b, uint32(btn))
	}
	for i := range *gen {
		b = binary.LittleEndian.AppendUint64(b, uint64(1000+i**step))
		for _, v := range []float64{float64(i%100) / 100, math.Sin(float64(i) / 9), math.Cos(float64(i) / 13), float64(i%21)/10 - 1} {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(v)))
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(i/15%8))
	}
	b = append(b, make([]byte, *trailing)...)
	ts.Check(os.WriteFile(ts.MkAbs(fs.Arg(0)), b, 0o644))
}
