// Package k8s renders the Kubernetes manifests of a sharded swarm run.
//
// The manifests are an Indexed Job whose pod I runs `scalegate swarm
// --shard I/N` against a server reached over the network, every pod
// starting its ramp at one shared instant. Kubernetes does the scheduling,
// placement and retries a coordinator would; scalegate does only what is
// its own — the deterministic client split, the shared clock and the exact
// merge (docs/scale-out.md).
//
// Shard reports are collected from the pods' logs: each pod prints its
// report between two marker lines after the run. Logs need no volume,
// storage class or credentials (a ReadWriteMany volume or a bucket would
// need all three and differ per cluster), survive the pod's completion
// for the Job's TTL, and `kubectl logs` is the one tool every cluster
// user has. CollectScript prints the commands.
package k8s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/load/swarmcmd"
	"github.com/scalegate/scalegate/internal/reference/server/exposition"
	"github.com/scalegate/scalegate/internal/sources/promql"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// Report markers: the lines around the report a pod prints to its log.
const (
	ReportBegin = "SCALEGATE-REPORT-BEGIN"
	ReportEnd   = "SCALEGATE-REPORT-END"
)

// Options is one sharded run of one leg of a profile.
type Options struct {
	Profile *profile.Profile
	Leg     profile.Leg
	Shards  int
	Image   string
	// Server is the game server's "host:port" as the pods reach it.
	Server string
	// ServerMetrics is the server's metrics URL (http_listen), "" for none.
	ServerMetrics string
	// StartAt is the shared start instant; Now is when the manifests are
	// rendered (it bounds the Job's deadline).
	StartAt, Now time.Time
	Namespace    string
	// CPU is each pod's CPU request (Kubernetes quantity, e.g. "1").
	CPU string
}

// Validate reports every problem with o at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Shards < 1 || o.Shards > 10000 {
		errs = append(errs, fmt.Errorf("--shards must be 1..10000, got %d", o.Shards))
	}
	if clients := o.Profile.ClientsFor(o.Leg); o.Shards > clients {
		errs = append(errs, fmt.Errorf("--shards %d is more than the leg's %d clients: every shard needs at least one", o.Shards, clients))
	}
	if strings.TrimSpace(o.Image) == "" {
		errs = append(errs, errors.New("--image is required (build it from the Dockerfile at the repository root)"))
	}
	if o.Profile.Server.Prometheus() && !o.Profile.Server.PromQL() {
		errs = append(errs, fmt.Errorf("profile %s scrapes its server's Prometheus endpoint, which a per-pod endpoint makes unreachable from the Job: query the Prometheus that scrapes it instead (server.metrics.source \"promql\", docs/metrics.md \"PromQL\"), or give the metrics file's URL (--server-metrics, [metrics] http_listen)", o.Profile.Name))
	}
	if o.Profile.Server.PromQL() && o.ServerMetrics != "" {
		errs = append(errs, fmt.Errorf("--server-metrics: profile %s reads its server through PromQL (server.metrics.url); give one source", o.Profile.Name))
	}
	if o.Profile.Server.PromQL() {
		if _, err := o.promqlSource(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := validServer(o.Server); err != nil {
		errs = append(errs, err)
	}
	if o.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(o.Namespace) {
			errs = append(errs, fmt.Errorf("--namespace %q: %s", o.Namespace, msg))
		}
	}
	if o.CPU != "" {
		if q, err := resource.ParseQuantity(o.CPU); err != nil || q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("--cpu %q: want a positive Kubernetes CPU quantity (\"1\", \"500m\")", o.CPU))
		}
	}
	if o.ServerMetrics != "" && !strings.HasPrefix(o.ServerMetrics, "http://") && !strings.HasPrefix(o.ServerMetrics, "https://") {
		errs = append(errs, fmt.Errorf("--server-metrics %q: pods cannot read a file on the server's machine; give its http(s) URL ([metrics] http_listen)", o.ServerMetrics))
	}
	if !o.StartAt.After(o.Now) {
		errs = append(errs, fmt.Errorf("--start-at %s is not in the future: every shard would start late", o.StartAt.Format(time.RFC3339)))
	}
	return errors.Join(errs...)
}

// validServer accepts HOST:PORT where HOST is a DNS name or an IP address
// and PORT a number 1..65535: the address lands in the pods' arguments,
// so nothing else may ride along ("game:7777;id").
func validServer(server string) error {
	bad := fmt.Errorf("--server %q: want HOST:PORT the pods can reach (a DNS name or an IP address, and a port 1..65535)", server)
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		return bad
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return bad
	}
	if net.ParseIP(host) == nil && len(validation.IsDNS1123Subdomain(strings.ToLower(host))) > 0 {
		return bad
	}
	return nil
}

// JobName is the Job's name: scalegate-<profile>-<leg>, DNS-1123 safe.
func (o *Options) JobName() string {
	name := "scalegate-" + o.Profile.Name + "-" + o.Leg.ID
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
	if len(name) > 52 { // leaves room for the pod name suffix Kubernetes adds
		name = strings.TrimRight(name[:52], "-")
	}
	return name
}

// swarmArgs is the profile's load as `scalegate swarm` arguments after the
// subcommand (swarmcmd, the gate's own builder), with the shard index left
// to Kubernetes. The swarm's --assert-* flags are not forwarded: a pod's
// verdict on its part of the load means nothing, and the merged report is
// gated by `scalegate --report` with every gate. The report path is the
// pod script's.
func (o *Options) swarmArgs() []string {
	host, port, _ := net.SplitHostPort(o.Server)
	so := swarmcmd.Options{Host: host, Port: port, ServerMetrics: o.ServerMetrics,
		Progress: "plain", Shard: "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(o.Shards), StartAt: o.StartAt.UTC().Format(time.RFC3339)}
	if src, err := o.promqlSource(); err == nil && src != nil {
		so.Prometheus = &swarmcmd.Prometheus{URL: o.Profile.Server.Metrics.URL, MapFile: configMount + "/" + queriesKey, PromQL: true, Labels: src.labels}
	}
	if len(o.Profile.Figures) > 0 {
		so.FiguresFile = configMount + "/" + figuresKey
	}
	return swarmcmd.Args(o.Profile, o.Leg, so)
}

// The files a pod's swarm reads (a PromQL mapping, the own figures) ride
// in a ConfigMap mounted into every pod.
const (
	configMount = "/etc/scalegate"
	queriesKey  = "queries.json"
	figuresKey  = "figures.json"
)

// configName is the ConfigMap's name.
func (o *Options) configName() string { return o.JobName() + "-config" }

// promqlSrc is a PromQL profile's source as the pods read it: the mapping
// (the reference server's unless the profile gives one) and the labels,
// {leg} and {pod} filled.
type promqlSrc struct {
	queries []byte
	labels  map[string]string
}

// promqlSource resolves the profile's PromQL source; nil without one.
func (o *Options) promqlSource() (*promqlSrc, error) {
	if !o.Profile.Server.PromQL() {
		return nil, nil
	}
	sm := o.Profile.Server.Metrics
	m := exposition.Map()
	if sm.Queries != nil {
		b, err := json.Marshal(sm.Queries)
		if err != nil {
			return nil, fmt.Errorf("server.metrics.queries: %w", err)
		}
		if m, err = promsource.ParseMap(b); err != nil {
			return nil, fmt.Errorf("server.metrics.queries: %w", err)
		}
	}
	m, labels, err := promql.Resolve(m, sm.Labels, map[string]string{promql.VarLeg: o.Leg.ID, promql.VarPod: sm.Pod})
	if err != nil {
		return nil, fmt.Errorf("server.metrics: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return &promqlSrc{queries: b, labels: labels}, nil
}

// configMap carries the files the pods' swarms read: a PromQL profile's
// mapping and the profile's own figures; nil when there are none.
func (o *Options) configMap(labels map[string]string) (map[string]any, error) {
	data := map[string]string{}
	src, err := o.promqlSource()
	if err != nil {
		return nil, err
	}
	if src != nil {
		data[queriesKey] = string(src.queries)
	}
	if len(o.Profile.Figures) > 0 {
		b, err := json.MarshalIndent(o.Profile.Figures, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("figures: %w", err)
		}
		data[figuresKey] = string(b)
	}
	if len(data) == 0 {
		return nil, nil
	}
	meta := map[string]any{"name": o.configName(), "labels": labels}
	if o.Namespace != "" {
		meta["namespace"] = o.Namespace
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}, nil
}

// podReport is where the pod's swarm writes its report.
const podReport = "/tmp/report.json"

// podScript runs the swarm, then prints its report between the markers.
// It exits 0 whenever a report was written, whatever the swarm's own
// verdict: the gate judges the merged report, and a failed pod would only
// hide a shard's evidence. Without a report it exits with the swarm's
// status, so the index is marked failed.
const podScript = `scalegate swarm "$@" --json ` + podReport + `
rc=$?
if [ -s ` + podReport + ` ]; then
  echo ` + ReportBegin + `
  cat ` + podReport + `
  echo ` + ReportEnd + `
  exit 0
fi
exit $rc`

// Manifests renders the Job as YAML, after a comment saying how to
// collect and merge the reports.
func Manifests(o Options) ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := o.Profile
	labels := map[string]string{"app.kubernetes.io/name": "scalegate", "scalegate.dev/profile": p.Name, "scalegate.dev/leg": o.Leg.ID}
	meta := map[string]any{"name": o.JobName(), "labels": labels}
	if o.Namespace != "" {
		meta["namespace"] = o.Namespace
	}
	job := map[string]any{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   meta,
		"spec": map[string]any{
			"completionMode": "Indexed",
			"completions":    o.Shards,
			"parallelism":    o.Shards,
			// A shard that fails is not retried (a retry would start late
			// and its clients would join a run already under way), and it
			// does not stop the others: the merge marks it missing.
			"backoffLimitPerIndex":    0,
			"activeDeadlineSeconds":   o.activeDeadlineS(),
			"ttlSecondsAfterFinished": 86400,
			"template":                o.podTemplate(labels),
		},
	}
	var b bytes.Buffer
	b.WriteString(header(&o))
	cm, err := o.configMap(labels)
	if err != nil {
		return nil, err
	}
	if cm != nil {
		if err := encodeYAML(&b, cm); err != nil {
			return nil, err
		}
		b.WriteString("---\n")
	}
	if err := encodeYAML(&b, job); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// activeDeadlineS bounds the Job's life: the wait for the shared start, the
// ramp and the hold, plus ten minutes' slack, so a stuck shard cannot hold
// cluster resources forever.
func (o *Options) activeDeadlineS() int64 {
	lead := o.StartAt.Sub(o.Now)
	p := o.Profile
	ramp := time.Duration(p.ClientsFor(o.Leg)*p.RampMs) * time.Millisecond
	return int64((lead + time.Duration(p.DurationS*float64(time.Second)) + ramp + 10*time.Minute).Seconds())
}

// podTemplate is the shard pod: one swarm container whose script turns the
// shard's report into log lines, where the merge collects it from.
func (o *Options) podTemplate(labels map[string]string) map[string]any {
	cpu := o.CPU
	if cpu == "" {
		cpu = "1"
	}
	container := map[string]any{
		"name":    "swarm",
		"image":   o.Image,
		"command": []string{"/bin/sh", "-c", podScript, "scalegate-shard"},
		"args":    o.swarmArgs(),
		"resources": map[string]any{
			"requests": map[string]string{"cpu": cpu, "memory": "256Mi"},
		},
	}
	spec := map[string]any{"restartPolicy": "Never", "containers": []any{container}}
	if o.Profile.Server.PromQL() || len(o.Profile.Figures) > 0 {
		container["volumeMounts"] = []any{map[string]any{"name": "config", "mountPath": configMount, "readOnly": true}}
		spec["volumes"] = []any{map[string]any{"name": "config", "configMap": map[string]any{"name": o.configName()}}}
	}
	return map[string]any{"metadata": map[string]any{"labels": labels}, "spec": spec}
}

// encodeYAML appends v to b as YAML, indented two spaces as Kubernetes
// manifests conventionally are.
func encodeYAML(b *bytes.Buffer, v any) error {
	enc := yaml.NewEncoder(b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("k8s: encode: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("k8s: encode: %w", err)
	}
	return nil
}

func header(o *Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# scalegate: profile %s, leg %s: %d clients in %d shards against %s, starting %s.\n",
		o.Profile.Name, o.Leg.ID, o.Profile.ClientsFor(o.Leg), o.Shards, o.Server, o.StartAt.UTC().Format(time.RFC3339))
	b.WriteString("# Apply before the start instant; every pod waits for it (a late pod records how late).\n")
	b.WriteString("# Collect the shard reports from the pods' logs once the Job is done, then merge and gate:\n")
	for _, l := range strings.Split(strings.TrimRight(CollectScript(o), "\n"), "\n") {
		b.WriteString("#   " + l + "\n")
	}
	return b.String()
}

// CollectScript is the shell that collects, merges and gates the run's
// reports: one file per shard index from that index's pod log.
func CollectScript(o *Options) string {
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	job := o.JobName()
	var b strings.Builder
	// Complete or Failed (a shard without a report fails its index):
	// either way the Job is over and every log there will be is there.
	fmt.Fprintf(&b, "until kubectl%s get job/%s -o jsonpath='{.status.conditions[?(@.status==\"True\")].type}' | grep -qE 'Complete|Failed'; do sleep 10; done\n", ns, job)
	fmt.Fprintf(&b, "for i in $(seq 0 %d); do\n", o.Shards-1)
	fmt.Fprintf(&b, "  kubectl%s logs --tail=-1 -l job-name=%s,batch.kubernetes.io/job-completion-index=$i \\\n", ns, job)
	fmt.Fprintf(&b, "    | sed -n '/^%s$/,/^%s$/{//!p}' > shard-$i.json\n", ReportBegin, ReportEnd)
	b.WriteString("  [ -s shard-$i.json ] || rm -f shard-$i.json   # a shard without a report is missing, not empty\n")
	b.WriteString("done\n")
	b.WriteString("scalegate merge --out merged.json shard-*.json\n")
	fmt.Fprintf(&b, "scalegate --profile %s --leg %s --report merged.json\n", o.Profile.Name, o.Leg.ID)
	return b.String()
}
