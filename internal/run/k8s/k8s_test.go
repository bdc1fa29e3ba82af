package k8s

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

func testOptions() Options {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	p := &profile.Profile{Name: "pr", Transport: "enet", Clients: 2000, DurationS: 60, RateHz: 60, RampMs: 5,
		RSSSampleIntervalS: 30, Patterns: []string{"weave"}, EntityType: "builtin:debug-entity"}
	return Options{Profile: p, Leg: p.Legs()[0], Shards: 10, Image: "ghcr.io/acme/scalegate:1.2", Server: "game.example:7777",
		ServerMetrics: "http://game.example:9100/metrics", StartAt: now.Add(3 * time.Minute), Now: now, Namespace: "load"}
}

// decodeJob decodes the manifests strictly into the Kubernetes API type:
// an unknown or misspelt field anywhere is an error.
func decodeJob(t *testing.T, b []byte) batchv1.Job {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var job batchv1.Job
	if err := dec.Decode(&job); err != nil {
		t.Fatalf("not a strict batch/v1 Job: %v\n%s", err, b)
	}
	return job
}

func TestManifestsIndexedJob(t *testing.T) {
	o := testOptions()
	b, err := Manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	job := decodeJob(t, b)
	s := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != "scalegate-pr-weave" || job.Namespace != "load" {
		t.Errorf("type/name: %s %s %s/%s", job.APIVersion, job.Kind, job.Namespace, job.Name)
	}
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 10 || *s.Parallelism != 10 {
		t.Errorf("completionMode %v completions %v parallelism %v", s.CompletionMode, s.Completions, s.Parallelism)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 || s.ActiveDeadlineSeconds == nil || *s.ActiveDeadlineSeconds < 180+60 {
		t.Errorf("backoffLimitPerIndex %v activeDeadlineSeconds %v", s.BackoffLimitPerIndex, s.ActiveDeadlineSeconds)
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 {
		t.Fatalf("pod: restart %s, %d containers", pod.RestartPolicy, len(pod.Containers))
	}
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{
		"game.example 7777 --clients 2000 --duration 60", "--shard $(JOB_COMPLETION_INDEX)/10 --start-at 2026-12-01T10:03:00Z",
		"--transport enet", "--ramp-ms 5", "--pattern weave", "--entity-type builtin:debug-entity",
		"--server-metrics http://game.example:9100/metrics",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if c.Image != o.Image || len(c.Command) != 4 || c.Command[0] != "/bin/sh" || !strings.Contains(c.Command[2], `scalegate swarm "$@" --json /tmp/report.json`) ||
		!strings.Contains(c.Command[2], ReportBegin) {
		t.Errorf("container %s %q", c.Image, c.Command)
	}
	if q := c.Resources.Requests[corev1.ResourceCPU]; q.String() != "1" {
		t.Errorf("cpu request %s", q.String())
	}
	if !bytes.HasPrefix(b, []byte("# scalegate: profile pr, leg weave: 2000 clients in 10 shards")) ||
		!bytes.Contains(b, []byte("scalegate merge --out merged.json shard-*.json")) ||
		!bytes.Contains(b, []byte("batch.kubernetes.io/job-completion-index=$i")) {
		t.Errorf("header lacks the collect recipe:\n%s", b)
	}
}

// TestPodScriptKeepsEvidence runs the pod's script with a stand-in
// scalegate: when the swarm wrote a report the pod prints it between the
// markers and exits 0, whatever the swarm's status (the gate judges the
// merge); without one it exits with the swarm's status.
func TestPodScriptKeepsEvidence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stub   string
		code   int
		report bool
	}{
		// The stub is called as: swarm a b --json PATH
		{"report, swarm failed", `printf '{"r":1}\n' > "$5"; exit 1`, 0, true},
		{"no report", `exit 5`, 5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "scalegate"), []byte("#!/bin/sh\n"+tc.stub+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			// The pod's /tmp is its own; here the report goes to the test's dir.
			script := strings.ReplaceAll(podScript, podReport, filepath.Join(dir, "report.json"))
			cmd := exec.Command("/bin/sh", "-c", script, "scalegate-shard", "a", "b")
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
			out, err := cmd.Output()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(string(out), ReportBegin+"\n{\"r\":1}\n"+ReportEnd)
			if code != tc.code || got != tc.report {
				t.Fatalf("exit %d (want %d), report printed %v (want %v):\n%s", code, tc.code, got, tc.report, out)
			}
		})
	}
}

func TestManifestsRefuse(t *testing.T) {
	for name, mut := range map[string]func(*Options){
		"no image":        func(o *Options) { o.Image = "" },
		"server no port":  func(o *Options) { o.Server = "game.example" },
		"too many shards": func(o *Options) { o.Shards = 2001 },
		"zero shards":     func(o *Options) { o.Shards = 0 },
		"past start":      func(o *Options) { o.StartAt = o.Now.Add(-time.Second) },
		"metrics file":    func(o *Options) { o.ServerMetrics = "/srv/metrics.json" },
	} {
		o := testOptions()
		mut(&o)
		if _, err := Manifests(o); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

func TestJobNameIsDNSSafe(t *testing.T) {
	o := testOptions()
	o.Profile.Name = "entity-scale"
	o.Leg = profile.Leg{ID: "weave_e2000_w4", Pattern: "weave"}
	if got := o.JobName(); got != "scalegate-entity-scale-weave-e2000-w4" {
		t.Errorf("job name %q", got)
	}
}

// TestValidateRefusesWhatWouldRideAlong: the server address, namespace and
// CPU request land in the manifests; anything but their plain forms is
// refused, naming the flag.
func TestValidateRefusesWhatWouldRideAlong(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Options)
		want string
	}{
		{func(o *Options) { o.Server = "game:7777;id" }, `--server "game:7777;id"`},
		{func(o *Options) { o.Server = "game;id:7777" }, `--server "game;id:7777"`},
		{func(o *Options) { o.Server = "game:70000" }, `--server "game:70000"`},
		{func(o *Options) { o.Namespace = "Load Tests" }, `--namespace "Load Tests"`},
		{func(o *Options) { o.CPU = "lots" }, `--cpu "lots"`},
		{func(o *Options) { o.CPU = "-1" }, `--cpu "-1"`},
	} {
		o := testOptions()
		tc.edit(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.want, err)
		}
	}
	o := testOptions()
	o.Server, o.Namespace, o.CPU = "10.0.0.5:7777", "load-tests", "500m"
	if err := o.Validate(); err != nil {
		t.Errorf("plain values refused: %v", err)
	}
}

// TestManifestsPromQL: a profile that reads its server through PromQL
// renders a ConfigMap with the mapping ({leg} and {pod} filled) and its
// own figures beside the Job, each strictly a Kubernetes API object; every pod mounts it and its
// swarm queries the profile's Prometheus with the labels. A profile that
// scrapes the endpoint itself is refused, naming the PromQL route.
func TestManifestsPromQL(t *testing.T) {
	o := testOptions()
	o.ServerMetrics = ""
	o.Profile.Figures = gatetable.OwnFigures{"physics_ms": {Unit: "ms", Better: "lower",
		Prometheus: &promsource.Figure{Histogram: "game_physics_seconds", Scale: ptrF(1000)}}}
	o.Profile.Server.Metrics = &profile.ServerMetrics{Source: "promql", URL: "http://prometheus.monitoring:9090", Pod: "game-0",
		Labels: map[string]string{"pod": "{pod}", "scalegate_leg": "{leg}"},
		Queries: map[string]any{"tick_ms": map[string]any{"histogram": "game_tick_seconds", "scale": 1000},
			"transport": map[string]any{"info": "game_build_info", "label": "transport", "labels": map[string]any{"pod": "{pod}"}}}}
	b, err := Manifests(o)
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d documents, want a ConfigMap and the Job:\n%s", len(docs), b)
	}
	var cm corev1.ConfigMap
	strictDecode(t, docs[0], &cm)
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != "scalegate-pr-weave-config" || cm.Namespace != "load" {
		t.Errorf("configmap %s %s %s/%s", cm.APIVersion, cm.Kind, cm.Namespace, cm.Name)
	}
	m, err := promsource.ParseMap([]byte(cm.Data["queries.json"]))
	if err != nil {
		t.Fatalf("the ConfigMap's mapping: %v\n%s", err, cm.Data["queries.json"])
	}
	if got := m["transport"].Labels["pod"]; got != "game-0" {
		t.Errorf("transport's pod label %q, want {pod} filled with game-0", got)
	}
	var figs gatetable.OwnFigures
	if err := json.Unmarshal([]byte(cm.Data["figures.json"]), &figs); err != nil || figs["physics_ms"].Prometheus == nil {
		t.Errorf("the ConfigMap's own figures: %v %v\n%s", figs, err, cm.Data["figures.json"])
	}
	job := decodeJob(t, docs[1])
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--server-metrics-promql http://prometheus.monitoring:9090 --server-metrics-map /etc/scalegate/queries.json",
		"--server-metrics-label pod=game-0 --server-metrics-label scalegate_leg=weave", "--server-figures /etc/scalegate/figures.json"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "--server-metrics ") {
		t.Errorf("args %q also name the metrics file source", args)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != cm.Name ||
		len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != pod.Volumes[0].Name || c.VolumeMounts[0].MountPath != "/etc/scalegate" {
		t.Errorf("pod does not mount the ConfigMap at /etc/scalegate: volumes %+v mounts %+v", pod.Volumes, c.VolumeMounts)
	}

	o.Profile.Server.Metrics = &profile.ServerMetrics{Source: "prometheus"}
	if _, err := Manifests(o); err == nil || !strings.Contains(err.Error(), `server.metrics.source "promql"`) {
		t.Errorf("a scraped Prometheus source: %v, want a refusal naming the PromQL route", err)
	}
	o.Profile.Server.Metrics = &profile.ServerMetrics{Source: "promql", URL: "http://p:9090", Labels: map[string]string{"pod": "{pod}"}}
	if _, err := Manifests(o); err == nil || !strings.Contains(err.Error(), "{pod} has no value") {
		t.Errorf("{pod} without pod: %v, want refused", err)
	}
}

// strictDecode decodes one YAML document into a Kubernetes API type,
// refusing unknown fields.
func strictDecode(t *testing.T, doc []byte, into any) {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, doc)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Fatalf("not a strict %T: %v\n%s", into, err, doc)
	}
}

func ptrF(v float64) *float64 { return &v }
