package catalog

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
)

// TestVetEveryMistake: each mistake is exactly one line, at the user's
// file, whatever else is wrong — the whole output is compared, so a
// dropped error and a noise line fail alike.
func TestVetEveryMistake(t *testing.T) {
	// want is the complete output, "FILE" for the file's path
	tests := []badProfile{
		{"five", `name: "fivex"
transport: "enet"
clients: 64
duration_s: 1
ramp_ms: 60
rate_hz: 1000
patterns: ["weave"]
baselined: false
clinets: 5
`, []string{
			`FILE:1:1: description: required field is missing (want a string)`,
			`FILE:1:7: name: is "fivex" but the file is five.cue: they must match`,
			`FILE:5:10: ramp_ms: the connect ramp does not fit duration_s: 64 clients 60 ms apart connect the last at 3.78s, not before the 1s run ends; lower clients or ramp_ms, or raise duration_s`,
			`FILE:6:10: rate_hz: invalid value 1000 (out of bound <=240)`,
			`FILE:9:1: clinets: field not allowed (did you mean clients?)`,
		}},
		// A misspelt field beside another error in the same struct: CUE
		// alone reports one of the two.
		{"typoplus", goodAs("typoplus") + "rate_hz: 1000\nclinets: 5\nsweep: {entity_counts: [0], sim_worker_threads: [1]}\n", []string{
			`FILE:9:10: rate_hz: invalid value 1000 (out of bound <=240)`,
			`FILE:10:1: clinets: field not allowed (did you mean clients?)`,
		}},
		// A cross-field rule runs although the schema failed elsewhere.
		{"sweepplus", strings.Replace(goodAs("sweepplus"), "baselined: false", "baselined: true", 1) +
			"tier: \"nightly\"\nsweep: {entity_counts: [0], sim_worker_threads: [1]}\n", []string{
			`FILE:7:12: baselined: must be false in a profile with a sweep: a sweep is a characterisation, never a baseline`,
			`FILE:9:7: tier: "nightly" is not one of "pr", "strict"`,
		}},
		{"missing", "name: \"missing\"\ntransport: \"quic\"\npatterns: [\"weave\"]\n", []string{
			`FILE:1:1: baselined: required field is missing (want a bool)`,
			`FILE:1:1: clients: required field is missing (want an int)`,
			`FILE:1:1: description: required field is missing (want a string)`,
			`FILE:1:1: duration_s: required field is missing (want a number)`,
		}},
		// A required field missing inside a struct is reported at that
		// struct, even when another field has a real error.
		{"nestedmissing", goodAs("nestedmissing") + "gates: tick_hz_min: {}\nrate_hz: \"fast\"\n", []string{
			`FILE:9:8: gates.tick_hz_min.threshold: required field is missing (want a number)`,
			`FILE:10:10: rate_hz: "fast" is a string, want a number`,
		}},
		{"emptycommand", goodAs("emptycommand") + "server: {kind: \"custom\", command: []}\n", []string{
			`FILE:9:35: server.command: is empty: give the program to run and its arguments, e.g. ["./bin/my-server", "--port", "{port}"]`,
		}},
		{"blankprogram", goodAs("blankprogram") + "server: {kind: \"custom\", command: [\"\", \"--port\", \"{port}\"]}\n", []string{
			`FILE:9:35: server.command: the first element is empty: it must be the program to run`,
		}},
		{"nocommand", goodAs("nocommand") + "server: kind: \"custom\"\n", []string{
			`FILE:9:1: server.command: required field is missing (want a list)`,
		}},
		{"customfaults", goodAs("customfaults") + "server: {kind: \"custom\", command: [\"x\"], faults: {}}\n", []string{
			`FILE:9:42: server.faults: field not allowed (a "custom" server has: command, config, config_format, kind, log_max_mb, metrics, ready_timeout_s)`,
		}},
		// A worst-window gate needs its window; no other gate takes one.
		{"nowindow", goodAs("nowindow") + "gates: tick_ms_p99_worst_window_max: threshold: 16.6\n", []string{
			`FILE:9:8: gates.tick_ms_p99_worst_window_max.window_s: required field is missing (want a number)`,
		}},
		{"straywindow", goodAs("straywindow") + "gates: tick_ms_p99_max: {threshold: 16.6, window_s: 10}\n", []string{
			`FILE:9:43: gates.tick_ms_p99_max.window_s: field not allowed (gates.tick_ms_p99_max has: abort_after_s, abort_margin_pct, level, phase, threshold)`,
		}},
		{"badkind", goodAs("badkind") + "server: kind: \"docker\"\n", []string{
			`FILE:9:15: server.kind: "docker" is not one of "builtin", "custom"`,
		}},
		{"types", goodAs("types") + "world: 5\nthreads: 1.5\n", []string{
			`FILE:9:8: world: 5 is an int, want a struct`,
			`FILE:10:10: threads: 1.5 is a number, want an int`,
		}},
		{"twice", goodAs("twice") + "clients: 5\n", []string{
			`FILE:9:10: clients: conflicting values 5 and 4 (the field is given two different values)`,
		}},
		{"ramp", strings.Replace(goodAs("ramp"), "clients: 4", "clients: 300", 1), []string{
			`FILE:4:10: clients: the connect ramp does not fit duration_s: 300 clients 20 ms apart connect the last at 5.98s, not before the 2s run ends; lower clients or ramp_ms, or raise duration_s`,
		}},
		// A client sweep runs its own counts: the largest that cannot ramp
		// in time is the one named.
		{"sweepramp", goodAs("sweepramp") + "sweep: clients: [2, 150, 300]\n", []string{
			`FILE:9:17: sweep.clients: the connect ramp does not fit duration_s: 300 clients 20 ms apart connect the last at 5.98s, not before the 2s run ends; lower clients or ramp_ms, or raise duration_s`,
		}},
		{"shards", goodAs("shards") + "shards: 5\n", []string{
			`FILE:9:9: shards: is 5 but clients goes down to 4: every shard needs at least one client`,
		}},
		{"sweepshards", goodAs("sweepshards") + "shards: 3\nsweep: clients: [2, 4]\n", []string{
			`FILE:9:9: shards: is 3 but sweep.clients goes down to 2: every shard needs at least one client`,
		}},
		{"noaxis", goodAs("noaxis") + "sweep: {}\n", []string{
			`FILE:9:8: sweep: needs at least one axis: clients, entity_counts, sim_worker_threads or snapshot_budget_bytes`,
		}},
		// Exactly one of transport and transports; the cross-transport
		// gate and the per-transport fault scope need both legs.
		{"notransport", strings.Replace(goodAs("notransport"), "transport: \"enet\"\n", "", 1), []string{
			`FILE:1:1: transport: the profile declares neither transport nor transports: exactly one is required (transport: "enet", or transports: ["enet", "quic"] to run every leg on each)`,
		}},
		{"bothtransports", goodAs("bothtransports") + "transports: [\"enet\", \"quic\"]\n", []string{
			`FILE:9:13: transports: the profile declares both transport and transports: exactly one is allowed (transports runs every leg on each of its transports; transport pins one)`,
		}},
		{"twicetransport", strings.Replace(goodAs("twicetransport"), "transport: \"enet\"", "transports: [\"quic\", \"quic\"]", 1) +
			"gates: transport_overhead_kbs_max: threshold: 3\n", []string{
			`FILE:3:13: transports: transport "quic" listed twice (one leg per transport)`,
			`FILE:9:36: gates.transport_overhead_kbs_max: needs transports: ["enet", "quic"]: it compares the wire bytes of the two legs of each load`,
		}},
		{"overheadsingle", goodAs("overheadsingle") + "gates: transport_overhead_kbs_max: threshold: 3\nserver: faults: only_on_transport: \"quic\"\n", []string{
			`FILE:9:36: gates.transport_overhead_kbs_max: needs transports: ["enet", "quic"]: it compares the wire bytes of the two legs of each load`,
			`FILE:10:36: server.faults.only_on_transport: needs transports: with one transport the faults apply to every leg or none`,
		}},
		{"transportsbaselined", strings.Replace(strings.Replace(goodAs("transportsbaselined"), "transport: \"enet\"", "transports: [\"enet\", \"quic\"]", 1),
			"baselined: false", "baselined: true", 1), []string{
			`FILE:7:12: baselined: must be false in a profile with transports: it compares transports, it never baselines`,
		}},
		// Two mistakes in one field are two lines: the name breaks the
		// schema's pattern and does not match the file.
		{"badname", strings.Replace(goodSrc, `"good"`, `"Bad Name"`, 1), []string{
			`FILE:1:7: name: is "Bad Name" but the file is badname.cue: they must match`,
			`FILE:1:7: name: invalid value "Bad Name" (out of bound =~"^[a-z][a-z0-9-]*$")`,
		}},
		// Early abort: only gates with a per-second figure, hard and
		// unscoped, unsharded; abort_on_breach must apply to something.
		{"abortgate", goodAs("abortgate") + "gates: entities_min: {threshold: 1, abort_after_s: 3}\n", []string{
			`FILE:9:52: gates.entities_min.abort_after_s: entities_min cannot end a leg early: it has no per-second figure (those that can: wire_kbs_max, kbs_max, tick_hz_min)`,
		}},
		{"abortadvisory", goodAs("abortadvisory") + "gates: tick_hz_min: {threshold: 30, level: \"advisory\", abort_margin_pct: 0}\n", []string{
			`FILE:9:74: gates.tick_hz_min.abort_margin_pct: tick_hz_min is advisory: an advisory gate never fails a leg, so it cannot end one`,
		}},
		{"abortnothing", goodAs("abortnothing") + "abort_on_breach: {}\ngates: entities_min: threshold: 1\n", []string{
			`FILE:9:18: abort_on_breach: no gate it could apply to: declare one of wire_kbs_max, kbs_max, tick_hz_min, hard and not scoped to a phase`,
		}},
		{"abortshards", goodAs("abortshards") + "shards: 2\nabort_on_breach: after_s: 2\ngates: tick_hz_min: threshold: 30\n", []string{
			`FILE:9:9: shards: is 2 but the profile ends legs early on a breach (abort_on_breach / abort_after_s): each shard sees only its own clients, so early abort needs an unsharded leg`,
		}},
		{"abortrange", goodAs("abortrange") + "abort_on_breach: {after_s: 0, margin_pct: 150}\ngates: tick_hz_min: threshold: 30\n", []string{
			`FILE:9:28: abort_on_breach.after_s: invalid value 0 (out of bound >=1)`,
			`FILE:9:43: abort_on_breach.margin_pct: invalid value 150 (out of bound <=100)`,
		}},
		// The warm-up must leave 1 s of the hold (2 s run, 3 clients 20 ms
		// apart: a 1.96 s hold) to measure.
		{"warmup", goodAs("warmup") + "warmup_s: 1.5\n", []string{
			`FILE:9:11: warmup_s: 1.5s leaves under 1s of the 1.94s hold (duration_s after the last of 4 clients' connect slots) to measure; lower warmup_s or raise duration_s`,
		}},
		{"delivery", goodAs("delivery") + "delivery: {min_rate_fraction: 1.5, max_gap_ms: 0}\n", []string{
			`FILE:9:31: delivery.min_rate_fraction: invalid value 1.5 (out of bound <=1)`,
			`FILE:9:48: delivery.max_gap_ms: invalid value 0 (out of bound >0)`,
		}},
		{"neither", strings.Replace(goodAs("neither"), `patterns: ["weave"]`, "", 1), []string{
			`FILE:1:1: patterns: the profile declares neither patterns nor pattern_mix: exactly one is required`,
		}},
	}
	dir, outs := loadErrors(t, tests)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, failed := outs[tc.name]
			if !failed {
				t.Fatal("loaded without error: want the errors below")
			}
			want := strings.ReplaceAll(strings.Join(tc.want, "\n"), "FILE", filepath.Join(dir, tc.name+".cue"))
			if got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// goodAs is goodSrc under another name: 8 lines, valid.
func goodAs(name string) string {
	return strings.Replace(goodSrc, `"good"`, fmt.Sprintf("%q", name), 1)
}

func TestOverrides(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "refx", goodAs("refx")+"world: test_spawn_ai_count: clients * 10\n")
	writeProfile(t, dir, "braced", goodAs("braced")+"gates: {wire_kbs_max: {threshold: 150, level: \"advisory\"}}\nworld: {test_spawn_ai_count: 5}\n")
	c, err := NewCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		profile string
		sets    []string
		check   func(p *profile.Profile) bool
	}{
		{"refx", []string{"clients=2"}, func(p *profile.Profile) bool { return p.Clients == 2 }},
		// A field computed from the overridden one follows it.
		{"refx", []string{"clients=3"}, func(p *profile.Profile) bool { return p.World.TestSpawnAICount == 30 }},
		{"refx", []string{"clients=2", "clients=3"}, func(p *profile.Profile) bool { return p.Clients == 3 }},
		{"refx", []string{"world.test_spawn_ai_count=2000"}, func(p *profile.Profile) bool { return p.World.TestSpawnAICount == 2000 }},
		{"refx", []string{`patterns=["idle"]`}, func(p *profile.Profile) bool { return strings.Join(p.Patterns, ",") == "idle" }},
		{"refx", []string{"patterns=[idle, weave]"}, func(p *profile.Profile) bool { return strings.Join(p.Patterns, ",") == "idle,weave" }},
		{"refx", []string{"server.faults.extra_tick_ms=5"}, func(p *profile.Profile) bool { return fmt.Sprint(p.Server.Faults["extra_tick_ms"]) == "5" }},
		{"refx", []string{"tier=strict", "transport=quic"}, func(p *profile.Profile) bool { return p.Tier == "strict" && p.Transport == "quic" }},
		{"refx", []string{"description=two words"}, func(p *profile.Profile) bool { return p.Description == "two words" }},
		{"refx", []string{`description="quoted"`}, func(p *profile.Profile) bool { return p.Description == "quoted" }},
		{"refx", []string{"duration_s=2.5", "baselined=false"}, func(p *profile.Profile) bool { return p.DurationS == 2.5 && !p.Baselined }},
		// The baseline's spread factor defaults to 5 and takes 0.
		{"refx", nil, func(p *profile.Profile) bool { return p.Baseline.SpreadK == 5 }},
		{"refx", []string{"baseline.spread_k=0"}, func(p *profile.Profile) bool { return p.Baseline.SpreadK == 0 }},
		{"refx", []string{"baseline.spread_k=3.5"}, func(p *profile.Profile) bool { return p.Baseline.SpreadK == 3.5 }},
		{"refx", []string{"world.interest_radius_m=1500"}, func(p *profile.Profile) bool { return fmt.Sprint(p.World.Extra["interest_radius_m"]) == "1500" }},
		{"braced", []string{"gates.wire_kbs_max.threshold=100"}, func(p *profile.Profile) bool {
			g := p.Gates["wire_kbs_max"]
			return g.Threshold != nil && *g.Threshold == 100 && g.Level == "advisory" && p.World.TestSpawnAICount == 5
		}},
		{"braced", []string{"gates.wire_kbs_max={threshold: 90}"}, func(p *profile.Profile) bool {
			g := p.Gates["wire_kbs_max"]
			return g.Threshold != nil && *g.Threshold == 90 && g.Level == "" // the replaced block has no level: unset, the tier rule (hard for wire)
		}},
	}
	for _, tc := range tests {
		name := tc.profile + " " + strings.Join(tc.sets, " ")
		var sets []Override
		for _, s := range tc.sets {
			o, err := ParseOverride(s)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sets = append(sets, o)
		}
		p, _, err := c.Load(tc.profile, sets...)
		if err != nil {
			t.Errorf("%s: %s", name, FormatError(err))
			continue
		}
		if !tc.check(p) {
			t.Errorf("%s: resolved %+v", name, p)
		}
		if strings.Join(p.Overrides, " ") != strings.Join(tc.sets, " ") {
			t.Errorf("%s: recorded overrides %q", name, p.Overrides)
		}
	}
}

// TestOverrideErrors: a bad path or value is one line naming the flag, the
// field and what was wanted.
func TestOverrideErrors(t *testing.T) {
	tests := []struct {
		sets []string
		want string
	}{
		{[]string{"clinets=4"}, "--set clinets=4: clinets: field not allowed (did you mean clients?)"},
		{[]string{"clients=abc"}, `--set clients=abc: clients: "abc" is a string, want an int (int & >=1 & <=1024)`},
		{[]string{"clients=4096"}, "--set clients=4096: clients: invalid value 4096 (out of bound <=1024)"},
		{[]string{"baselined=maybe"}, `--set baselined=maybe: baselined: "maybe" is a string, want a bool`},
		{[]string{"patterns=weave"}, `--set patterns=weave: patterns: "weave" is a string, want a list`},
		{[]string{"patterns=[loop]"}, `--set patterns=[loop]: patterns.0: "loop" is not one of`},
		{[]string{`patterns=["idle"`}, `--set patterns=["idle": patterns: ["idle" is not a value`},
		{[]string{"patterns.0=idle"}, "--set patterns.0=idle: patterns.0: a list element cannot be set alone"},
		{[]string{"a..b=1"}, "--set a..b=1: a..b: not a field path"},
		{[]string{"world.bogus=1"}, "--set world.bogus=1: world.bogus: field not allowed"},
		{[]string{"clients=1+1"}, `--set clients=1+1: clients: "1+1" is a string, want an int`},
		{[]string{"pattern_mix=weave:80,idle:20"}, "--set pattern_mix=weave:80,idle:20: pattern_mix: the profile declares both patterns and pattern_mix"},
		// Values that once passed vet and broke the run: a near-zero rate
		// (the swarm flooded), a duration a clock cannot count (printed
		// negative), an empty pattern list (an internal CUE message).
		{[]string{"rate_hz=1e-300"}, "--set rate_hz=1e-300: rate_hz: invalid value 1E-300 (out of bound >=1)"},
		{[]string{"duration_s=1e308"}, "--set duration_s=1e308: duration_s: invalid value 1E+308 (out of bound <=604800)"},
		{[]string{"patterns=[]"}, "--set patterns=[]: patterns: is empty: list at least one"},
		{[]string{"baseline.spread_k=-1"}, "--set baseline.spread_k=-1: baseline.spread_k: invalid value -1 (out of bound >=0)"},
		// Two bad flags: both reported, in the order given.
		{[]string{"clinets=4", "world.tset=1"}, "--set clinets=4: clinets: field not allowed (did you mean clients?)\n--set world.tset=1: world.tset: field not allowed"},
		{[]string{"tier=nightly", "clients=0", "rate_hz=fast"}, "--set tier=nightly: tier: \"nightly\" is not one of \"pr\", \"strict\"\n--set clients=0: clients: invalid value 0 (out of bound >=1)\n--set rate_hz=fast: rate_hz: \"fast\" is a string, want a number"},
		{[]string{"rate_hz=fast", "clients=0", "tier=nightly"}, "--set rate_hz=fast: rate_hz: \"fast\" is a string, want a number\n--set clients=0: clients: invalid value 0 (out of bound >=1)\n--set tier=nightly: tier: \"nightly\" is not one of \"pr\", \"strict\""},
	}
	c, err := NewCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		var sets []Override
		for _, s := range tc.sets {
			o, err := ParseOverride(s)
			if err != nil {
				t.Fatal(err)
			}
			sets = append(sets, o)
		}
		_, _, err := c.Load("smoke", sets...)
		if got := FormatError(err); err == nil || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%v:\ngot  %s\nwant %s…", tc.sets, got, tc.want)
		}
	}
}

func TestParseOverride(t *testing.T) {
	for _, tc := range []struct {
		in, path, value string
		ok              bool
	}{
		{"clients=4", "clients", "4", true},
		{" clients =4", "clients", "4", true},
		{"entity_type=builtin:sensor-fighter", "entity_type", "builtin:sensor-fighter", true},
		{"a=b=c", "a", "b=c", true},
		{"description=", "description", "", true},
		{"clients", "", "", false},
		{"=4", "", "", false},
	} {
		o, err := ParseOverride(tc.in)
		if (err == nil) != tc.ok || o.Path != tc.path || o.Value != tc.value {
			t.Errorf("%q: %+v, %v", tc.in, o, err)
		}
	}
}

// FuzzOverride: any --set text applied to a valid profile loads or gives
// problems that each name the flag; never a panic.
func FuzzOverride(f *testing.F) {
	for _, s := range []string{"clients=4", "patterns=[idle]", `x="`, "a.b.c={d: [1, {e: f}]}", "world=", "server.kind=custom"} {
		f.Add(s)
	}
	dir := f.TempDir()
	writeProfile(f, dir, "good", goodSrc)
	c, err := NewCatalog(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseOverride(s)
		if err != nil {
			return
		}
		_, _, err = c.Load("good", o)
		if err == nil {
			return
		}
		for _, line := range strings.Split(FormatError(err), "\n") {
			if !strings.HasPrefix(line, "--set ") {
				t.Fatalf("problem not at the flag: %q", line)
			}
		}
	})
}
