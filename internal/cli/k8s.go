package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/k8s"
)

const k8sUsage = `usage: scalegate k8s --profile NAME --shards N --image IMAGE --server HOST:PORT [options]

Prints the Kubernetes manifests of a sharded swarm run of one leg of the
profile: an Indexed Job of N pods, pod I running
  scalegate swarm HOST PORT --shard I/N --start-at T ...
with the profile's load, every pod starting its ramp at T. The header
comment is the script that collects the shard reports from the pod logs,
merges them and gates the merged report (docs/scale-out.md).

  scalegate k8s --profile pr --shards 10 --image REGISTRY/scalegate:TAG \
    --server game.internal:7777 --server-metrics http://game.internal:9100/metrics \
    | kubectl apply -f -

options:
`

func init() {
	register("k8s", "print the Kubernetes Indexed Job of a sharded swarm run", runK8s)
}

func runK8s(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("k8s", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), k8sUsage); fs.PrintDefaults() }
	var o k8s.Options
	profile := fs.String("profile", "", "profile whose load to run")
	profilesDir := fs.String("profiles", "", "directory of the team's own profiles (default: the built-in ones)")
	leg := fs.String("leg", "", "leg `ID` to run (needed when the profile has several)")
	var sets setFlags
	fs.Var(&sets, "set", setUsage)
	startAt := fs.String("start-at", "", "shared start instant, RFC 3339 (default: now + --start-in)")
	startIn := fs.Duration("start-in", 3*time.Minute, "with no --start-at: start this long after now, a Go `duration` (3m, 90s): time to schedule pods and pull the image")
	fs.IntVar(&o.Shards, "shards", 0, "swarm pods (shards)")
	fs.StringVar(&o.Image, "image", "", "container image with scalegate (see the Dockerfile)")
	fs.StringVar(&o.Server, "server", "", "game server `HOST:PORT` as the pods reach it")
	fs.StringVar(&o.ServerMetrics, "server-metrics", "", "the server's metrics `URL` ([metrics] http_listen), sampled by every shard")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace of the Job (default: kubectl's)")
	fs.StringVar(&o.CPU, "cpu", "1", "CPU request per pod (one shard process per core of clients; docs/scale-out.md)")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Usage, "k8s: unexpected argument %q", fs.Arg(0))
	}
	if *profile == "" {
		return exitcode.Errorf(exitcode.Usage, "k8s: --profile NAME is required")
	}
	p, err := loadProfile(env, *profilesDir, *profile, sets)
	if err != nil {
		return err
	}
	if o.Leg, err = shardLeg(p, *leg); err != nil {
		return err
	}
	o.Profile, o.Now = p, time.Now()
	if o.StartAt, err = startInstant(o.Now, *startIn, *startAt); err != nil {
		return err
	}
	b, err := k8s.Manifests(o)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("k8s: %w", err))
	}
	_, err = env.Stdout.Write(b)
	return err
}

// shardLeg picks the leg to shard, refusing what the manifests cannot ship
// to the pods: everything they run must come from the image and the flags.
func shardLeg(p *profile.Profile, id string) (profile.Leg, error) {
	if len(p.Impairment) > 0 {
		return profile.Leg{}, exitcode.Errorf(exitcode.Usage, "k8s: profile %s declares an impairment: its relay schedule is not shipped to the pods by these manifests (run it with the gate, or with swarm --degrade-schedule in your own pods)", p.Name)
	}
	leg, err := p.LegByID(id)
	if err != nil {
		return leg, exitcode.With(exitcode.Usage, fmt.Errorf("k8s: %w", err))
	}
	if strings.HasPrefix(leg.Pattern, "trace:") || strings.Contains(leg.PatternMix, "trace:") {
		return leg, exitcode.Errorf(exitcode.Usage, "k8s: leg %s replays a recording from the profile directory, which these manifests do not ship to the pods", leg.ID)
	}
	return leg, nil
}

// startInstant is the shared instant every shard starts its ramp at:
// --start-at as given, or now plus --start-in, whole seconds so the
// manifests print it exactly.
func startInstant(now time.Time, startIn time.Duration, startAt string) (time.Time, error) {
	if startAt == "" {
		return now.Add(startIn).Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, startAt)
	if err != nil {
		return t, exitcode.Errorf(exitcode.Usage, "k8s: --start-at %q: want RFC 3339", startAt)
	}
	return t, nil
}
