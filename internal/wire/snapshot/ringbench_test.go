package snapshot

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"testing"
)

// ringCorpus names a file BenchmarkRingDecodeOwnBodies writes its streams
// to, so that tools/enetbench/decbench can time the C decoder the C11d
// leg uses on the very bodies the Go decoder is timed on.
var ringCorpus = flag.String("ringcorpus", "", "write BenchmarkRingDecodeOwnBodies' streams to this file (tools/enetbench/decbench reads it)")

// clientStream is the bodies one client of a 128-client reference world
// receives: 128 entities in view, 48 carried per snapshot (round robin, as
// a binding budget spreads them), each a delta against the snapshot the
// client acknowledged two ticks before.
func clientStream(tb testing.TB, ticks int) (flags []uint8, bodies [][]byte) {
	return clientStreamOf(tb, ticks, 21)
}

// clientStreamOf is clientStream for the world of seed: another seed is
// another client's view, with bodies of other lengths and codes.
func clientStreamOf(tb testing.TB, ticks int, seed uint64) (flags []uint8, bodies [][]byte) {
	l := newLink(tb)
	f := newFlight(128, seed)
	for tick := uint32(1); tick <= uint32(ticks); tick++ {
		f.step()
		l.enc.Reset()
		for i := 0; i < 48; i++ {
			s := Quantize(&f.recs[(int(tick)*48+i)%len(f.recs)])
			l.enc.AppendState(&s)
		}
		fl, body, _ := l.enc.FinishDelta(tick, &l.sent, tick-2, tick > 2, nil, true, false)
		flags, bodies = append(flags, fl), append(bodies, bytes.Clone(body))
	}
	return flags, bodies
}

// BenchmarkRingDecode is the swarm's per-snapshot decode in a worker: each
// of `clients` clients, in turn, decodes the same tick's delta (48 entities
// against a view of 128) against its own ring, so the rings compete for the
// cache as they do in a worker of 128 or 256 clients. One decoder serves
// them all, as one serves a worker.
func BenchmarkRingDecode(b *testing.B) {
	flags, bodies := clientStream(b, 4*RingSize)
	for _, clients := range []int{1, 128, 256} {
		b.Run(fmt.Sprintf("clients-%d", clients), func(b *testing.B) {
			benchRings(b, clients, func(int) ([]uint8, [][]byte) { return flags, bodies })
		})
	}
}

// BenchmarkRingDecodeOwnBodies is BenchmarkRingDecode with each client
// decoding its own stream, as live: 128 clients see 128 different worlds'
// bodies. In BenchmarkRingDecode every client decodes the same body in
// turn, so the branches of its codes repeat 128 times and a branch
// predictor learns them; live they do not repeat.
func BenchmarkRingDecodeOwnBodies(b *testing.B) {
	const clients = 128
	flags, bodies := make([][]uint8, clients), make([][][]byte, clients)
	for i := range clients {
		flags[i], bodies[i] = clientStreamOf(b, 4*RingSize, uint64(100+i))
	}
	if *ringCorpus != "" {
		if err := writeRingCorpus(*ringCorpus, flags, bodies); err != nil {
			b.Fatal(err)
		}
	}
	benchRings(b, clients, func(i int) ([]uint8, [][]byte) { return flags[i], bodies[i] })
}

// benchRings times clients rings decoding, tick by tick and client by
// client in turn through one decoder, the stream stream(i) gives client i
// (every stream as long), and reports ns per client-snapshot.
func benchRings(b *testing.B, clients int, stream func(i int) ([]uint8, [][]byte)) {
	d, err := NewDecoder()
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	rings := make([]Ring, clients)
	_, first := stream(0)
	pass := func() {
		for i := range rings {
			rings[i].Reset() // storage kept: a client's ring in steady state
		}
		for t := range first {
			for i := range rings {
				flags, bodies := stream(i)
				if _, _, err := d.CheckRing(flags[t], bodies[t], uint32(t+1), &rings[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	pass() // the rings' storage grows once, outside the timing
	b.ReportAllocs()
	passes := 0
	for b.Loop() {
		pass()
		passes++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(passes*clients*len(first)), "ns/client-snapshot")
}

// writeRingCorpus writes every client's stream to path: "sgrc1", the
// client and tick counts (uint32 LE), then per client, per tick, the
// envelope flags (1 byte), the body's length (uint32 LE) and the body.
// Tick t (from 0) is the snapshot of tick t+1.
func writeRingCorpus(path string, flags [][]uint8, bodies [][][]byte) error {
	var buf bytes.Buffer
	buf.WriteString("sgrc1")
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(bodies))))
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(bodies[0]))))
	for i := range bodies {
		for t, body := range bodies[i] {
			buf.WriteByte(flags[i][t])
			buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(body))))
			buf.Write(body)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("ring corpus: %w", err)
	}
	return nil
}
