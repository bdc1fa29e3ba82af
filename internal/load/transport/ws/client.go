package ws

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"

	"github.com/coder/websocket"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// dial creates a client host: an HTTP client whose connections count their
// bytes at the socket (below TLS for wss).
func dial(name string, useTLS bool, opt transport.Options) (*Host, error) {
	if opt.MaxPeers == 0 {
		opt.MaxPeers = 1 // as every backend's dialling host: one connection per bot
	}
	h := newHost(name, opt)
	h.scheme = "ws"
	var d net.Dialer
	h.tr = &http.Transport{
		Proxy: nil, // a load tool talks to the server it was given, never via an environment proxy
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if slot, ok := ctx.Value(remoteKey{}).(*string); ok {
				*slot = c.RemoteAddr().String()
			}
			return &countingConn{Conn: c, w: &h.w}, nil
		},
		DisableKeepAlives:   true, // one TCP connection per Connect, never pooled
		DisableCompression:  true,
		TLSHandshakeTimeout: handshakeTimeout,
	}
	if useTLS {
		h.scheme = "wss"
		conf, err := clientTLS(opt.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%s: dial: %w", name, err)
		}
		h.tr.TLSClientConfig = conf
	}
	h.client = &http.Client{Transport: h.tr}
	return h, nil
}

// remoteKey carries, in a dial's context, where DialContext records the
// connection's remote address.
type remoteKey struct{}

// Connect opens a WebSocket connection to addr: a URL whose scheme is the
// host's ("ws://host:port/path?query" or "wss://..."), or "host:port" for
// the host's scheme and Options.Path. The TCP connect, TLS and HTTP upgrade
// happen on a goroutine and end in EventConnect, or EventDisconnect
// (ReasonTimeout; Stats.LastDialError says why). The connect data word is
// not carried (Capabilities.ConnectData is false).
func (h *Host) Connect(addr string, _ uint32) (transport.PeerID, error) {
	if h.closed {
		return 0, transport.ErrClosed
	}
	if h.client == nil {
		return 0, fmt.Errorf("%s: connect %s: a listening host does not dial", h.name, addr)
	}
	u, err := h.target(addr)
	if err != nil {
		return 0, err
	}
	if len(h.peers) >= h.opt.MaxPeers {
		return 0, fmt.Errorf("%s: connect %s: host has its %d peers (MaxPeers)", h.name, addr, h.opt.MaxPeers)
	}
	if !h.join() {
		return 0, transport.ErrClosed
	}
	p := h.newPeer()
	p.addr = u.Host
	h.peers[p.id] = p
	go func() {
		defer h.wg.Done()
		defer close(p.done)
		defer p.cancel()
		h.dialPeer(p, u.String())
	}()
	return p.id, nil
}

// target turns Connect's address into the URL to dial.
func (h *Host) target(addr string) (*url.URL, error) {
	u, err := url.Parse(addr)
	if err != nil || u.Scheme == "" || u.Host == "" {
		host, port, serr := net.SplitHostPort(addr)
		if serr != nil {
			return nil, fmt.Errorf("%s: connect address %q: want %s://host:port/path or host:port: %w", h.name, addr, h.scheme, serr)
		}
		if n, perr := strconv.ParseUint(port, 10, 16); perr != nil || n == 0 || host == "" {
			return nil, fmt.Errorf("%s: connect address %q: want host:port with a port 1-65535", h.name, addr)
		}
		return &url.URL{Scheme: h.scheme, Host: addr, Path: h.path}, nil
	}
	if u.Scheme != h.scheme {
		return nil, fmt.Errorf("%s: connect address %q: scheme %q, but this host speaks %s (use the %q transport)", h.name, addr, u.Scheme, h.scheme, u.Scheme)
	}
	return u, nil
}

// dialPeer connects p and serves it until it ends.
func (h *Host) dialPeer(p *peer, target string) {
	var remote string
	ctx, cancel := context.WithTimeout(context.WithValue(p.ctx, remoteKey{}, &remote), min(handshakeTimeout, h.opt.Timeout))
	conn, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPClient: h.client, CompressionMode: websocket.CompressionDisabled})
	cancel()
	if resp != nil && resp.Body != nil && err != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		h.st.dialFailures.Add(1)
		setLast(&h.st.lastDialError, fmt.Errorf("%s: dial %s: %w", h.name, target, err))
		h.push(event{Event: transport.Event{Kind: transport.EventDisconnect, Peer: p.id, Data: p.reason(context.Canceled)}, p: p})
		return
	}
	p.conn.Store(conn)
	p.remote.Store(&remote)
	h.push(event{Event: transport.Event{Kind: transport.EventConnect, Peer: p.id}, p: p})
	p.serve(conn)
}
