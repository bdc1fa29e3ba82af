package swarmcli

import (
	"flag"
	"strconv"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/swarm"
)

// declareAssertFlags declares one --assert-* flag per gate of the table that
// names one (and its aliases), writing into a. Nothing here lists a gate:
// a gate added to the table gets its swarm flag from this loop.
func declareAssertFlags(fs *flag.FlagSet, a swarm.Asserts) {
	for _, g := range gatetable.All() {
		if g.Flag == "" {
			continue
		}
		var v flag.Value = &thresholdFlag{a: a, g: g}
		if g.Kind == gatetable.Switch {
			v = &switchFlag{a: a, g: g}
		}
		fs.Var(v, g.Flag, g.SwarmUsage())
		for _, alias := range g.Aliases {
			fs.Var(v, alias, "alias of --"+g.Flag)
		}
	}
}

// thresholdFlag is a numeric assert; its default prints as the off value.
type thresholdFlag struct {
	a swarm.Asserts
	g gatetable.Gate
}

func (f *thresholdFlag) String() string {
	if f == nil || f.a == nil {
		return ""
	}
	if v, ok := f.a[f.g.Name]; ok {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	if f.g.ZeroIsOff {
		return "0"
	}
	return "-1"
}

func (f *thresholdFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	f.a.Set(f.g, v)
	return nil
}

// switchFlag is a boolean assert (admission).
type switchFlag struct {
	a swarm.Asserts
	g gatetable.Gate
}

func (f *switchFlag) String() string {
	if f == nil || f.a == nil {
		return "false"
	}
	_, on := f.a[f.g.Name]
	return strconv.FormatBool(on)
}

func (f *switchFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if on {
		f.a[f.g.Name] = 0
	} else {
		delete(f.a, f.g.Name)
	}
	return nil
}

// IsBoolFlag lets `--assert-admission` stand alone.
func (f *switchFlag) IsBoolFlag() bool { return true }
