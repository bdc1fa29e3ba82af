package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"sync"
	"time"

	quicgo "github.com/quic-go/quic-go"
)

// The bare stack is quic-go used directly, with none of scalegate's host
// layer (no event queue, no sender or datagram-reader goroutine of ours, no
// counting socket wrapper): the client's owner calls SendDatagram itself,
// one goroutine per connection drains ReceiveDatagram, and each connection
// has its own plain *net.UDPConn, which quic-go reads with recvmmsg and
// writes with GSO. It is the floor any quic-go client pays for this
// traffic, measured to tell quic-go's own cost from the host layer's.

const bareALPN = "swarmcost-bare"

// bareConfig mirrors the scalegate host's quic-go settings that matter
// while connected (datagrams on, idle timeout, keep-alive).
func bareConfig() *quicgo.Config {
	return &quicgo.Config{
		EnableDatagrams: true,
		MaxIdleTimeout:  10 * time.Second,
		KeepAlivePeriod: 10 * time.Second / 3,
	}
}

// bareServerTLS makes a throwaway self-signed certificate, as the host does.
func bareServerTLS() (*tls.Config, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "swarmcost"},
		DNSNames:     []string{"swarmcost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: priv}},
		NextProtos:   []string{bareALPN},
		MinVersion:   tls.VersionTLS13,
	}, nil
}

func bareClientTLS() *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // loopback measurement against our own subprocess
		NextProtos:         []string{bareALPN},
		ServerName:         "swarmcost",
		MinVersion:         tls.VersionTLS13,
	}
}

// runBareServer is the load server of the bare stack: every tick it sends
// each connection one snapshot-sized datagram carrying the tick, and
// discards what the clients send. ready gets its address once it listens.
func runBareServer(ctx context.Context, snap int, ready func(addr string)) error {
	tlsConf, err := bareServerTLS()
	if err != nil {
		return err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	tr := &quicgo.Transport{Conn: udp}
	defer tr.Close()
	ln, err := tr.Listen(tlsConf, bareConfig())
	if err != nil {
		return err
	}
	ready(udp.LocalAddr().String())
	var mu sync.Mutex
	conns := map[*quicgo.Conn]bool{}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Go(func() {
		for {
			conn, err := ln.Accept(ctx)
			if err != nil {
				return
			}
			mu.Lock()
			conns[conn] = true
			mu.Unlock()
			wg.Go(func() {
				for {
					if _, err := conn.ReceiveDatagram(ctx); err != nil {
						break
					}
				}
				mu.Lock()
				delete(conns, conn)
				mu.Unlock()
			})
		}
	})
	body := make([]byte, snap)
	var tick uint32
	t := time.NewTicker(time.Second / tickHz)
	defer t.Stop()
	var live []*quicgo.Conn
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		tick++
		binary.LittleEndian.PutUint32(body[1:], tick)
		mu.Lock()
		live = live[:0]
		for c := range conns {
			live = append(live, c)
		}
		mu.Unlock()
		for _, c := range live {
			_ = c.SendDatagram(body)
		}
	}
}

// bareClient is one quic-go connection on its own socket, with the reader
// goroutine that counts its snapshots.
type bareClient struct {
	tr   *quicgo.Transport
	conn *quicgo.Conn
	done chan struct{}

	mu sync.Mutex
	w  tickWindow
}

func dialBare(ctx context.Context, addr string) (*bareClient, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	b := &bareClient{tr: &quicgo.Transport{Conn: udp}, done: make(chan struct{})}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if b.conn, err = b.tr.Dial(dctx, ua, bareClientTLS(), bareConfig()); err != nil {
		_ = b.tr.Close()
		_ = udp.Close()
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	go b.read()
	return b, nil
}

// read counts snapshots until the connection ends.
func (b *bareClient) read() {
	defer close(b.done)
	for {
		p, err := b.conn.ReceiveDatagram(context.Background())
		if err != nil {
			return
		}
		b.mu.Lock()
		b.w.add(p)
		b.mu.Unlock()
	}
}

// step sends the Input: what the host stack's Service and Send stand for,
// since the reader goroutine counts the snapshots. A bare client is up
// from its dial until the connection ends.
func (b *bareClient) step(input []byte) (up, gone bool) {
	select {
	case <-b.done:
		return false, true
	default:
	}
	_ = b.conn.SendDatagram(input)
	return true, false
}

func (b *bareClient) window() tickWindow {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w
}

func (b *bareClient) reset() {
	b.mu.Lock()
	b.w = tickWindow{}
	b.mu.Unlock()
}

func (b *bareClient) rtt() time.Duration { return b.conn.ConnectionStats().SmoothedRTT }

// close ends the connection and waits for the reader.
func (b *bareClient) close() {
	_ = b.conn.CloseWithError(0, "")
	<-b.done
	_ = b.tr.Close()
	if err := b.tr.Conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintln(os.Stderr, "swarmcost: close socket:", err)
	}
}
