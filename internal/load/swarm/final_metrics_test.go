package swarm

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// drainSpy is a test backend: ENet, except that a client's Disconnect first
// runs onDisconnect. It lets a test act at the exact moment the swarm starts
// disconnecting, so ordering bugs fail every time rather than by luck.
type drainSpy struct{ transport.Backend }

var onSpyDisconnect atomic.Pointer[func()]

func (drainSpy) Name() string { return "enet-drain-spy" }

func (b drainSpy) Dial(opt transport.Options) (transport.Host, error) {
	h, err := b.Backend.Dial(opt)
	if err != nil {
		return nil, err
	}
	return spyHost{h}, nil
}

type spyHost struct{ transport.Host }

func (h spyHost) Disconnect(p transport.PeerID, reason uint32) {
	if f := onSpyDisconnect.Load(); f != nil {
		(*f)()
	}
	h.Host.Disconnect(p, reason)
}

func init() {
	enet, err := transport.Lookup("enet")
	if err != nil {
		panic(err)
	}
	transport.Register(drainSpy{enet})
}

// The embedded server_tick is read while every client is still connected:
// here the metrics file turns into a drained server's (0 peers, entities
// gone) the moment the first client disconnects, and the report must still
// carry the loaded server's file.
func TestEmbeddedMetricsPredateTheDisconnects(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
	path := filepath.Join(t.TempDir(), "m.json")
	if err := report.WriteFileAtomic(path, []byte(metricsFile)); err != nil {
		t.Fatal(err)
	}
	drained := strings.Replace(strings.Replace(metricsFile, `"peers":8`, `"peers":0`, 1), `"entities":40`, `"entities":0`, 1)
	drain := func() { _ = report.WriteFileAtomic(path, []byte(drained)) }
	onSpyDisconnect.Store(&drain)
	t.Cleanup(func() { onSpyDisconnect.Store(nil) })

	cfg := Config{Addr: srv.addr, Transport: "enet-drain-spy", Clients: 3, Threads: 2, Duration: 2 * time.Second,
		Ramp: 10 * time.Millisecond, ServerMetrics: path, RSSSampleInterval: time.Second}
	res := runSwarm(t, context.Background(), cfg, 60*time.Second)
	if res.Report.ClientsConnected != 3 {
		t.Fatalf("connected %d of 3", res.Report.ClientsConnected)
	}
	if res.ServerTick == nil {
		t.Fatalf("no server_tick embedded: %s", res.Report.ServerMetricsError)
	}
	if res.ServerTick.Peers != 8 || res.ServerTick.Entities != 40 {
		t.Fatalf("embedded metrics describe the drained server: peers %d entities %d", res.ServerTick.Peers, res.ServerTick.Entities)
	}
	if b, _, _ := report.ReadServerTick(path); b == nil || b.Peers != 0 {
		t.Fatalf("the spy never drained the file: the test proved nothing")
	}
}
