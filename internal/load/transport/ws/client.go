package ws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
	h.header = http.Header(opt.Header).Clone()
	return h, nil
}

// remoteKey carries, in a dial's context, where DialContext records the
// connection's remote address.
type remoteKey struct{}

// Connect opens a WebSocket connection to addr: a URL whose scheme is the
// host's ("ws://host:port/path?query" or "wss://..."), or "host:port" for
// the host's scheme and Options.Path. The TCP connect, TLS and HTTP upgrade
// (with Options.Header) happen on a goroutine and end in EventConnect, or
// EventDisconnect (ReasonTimeout, with why in its Payload: dialCause; also
// in Stats.LastDialError). The connect data word is not carried
// (Capabilities.ConnectData is false). No error or statistic shows the
// query's values or the userinfo: they are join secrets (redact).
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
		return 0, fmt.Errorf("%s: connect %s: host has its %d peers (MaxPeers)", h.name, redact(addr), h.opt.MaxPeers)
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
		h.dialPeer(p, u)
	}()
	return p.id, nil
}

// target turns Connect's address into the URL to dial.
func (h *Host) target(addr string) (*url.URL, error) {
	u, err := url.Parse(addr)
	if err != nil || u.Scheme == "" || u.Host == "" {
		host, port, serr := net.SplitHostPort(addr)
		if serr != nil { // serr is not wrapped: its text repeats addr, secrets and all
			return nil, fmt.Errorf("%s: connect address %q: want %s://host:port/path or host:port", h.name, redact(addr), h.scheme)
		}
		if n, perr := strconv.ParseUint(port, 10, 16); perr != nil || n == 0 || host == "" {
			return nil, fmt.Errorf("%s: connect address %q: want host:port with a port 1-65535", h.name, redact(addr))
		}
		return &url.URL{Scheme: h.scheme, Host: addr, Path: h.path}, nil
	}
	if u.Scheme != h.scheme {
		return nil, fmt.Errorf("%s: connect address %q: scheme %q, but this host speaks %s (use the %q transport)", h.name, redactURL(u), u.Scheme, h.scheme, u.Scheme)
	}
	return u, nil
}

// redacted replaces a secret in what a host shows.
const redacted = "REDACTED"

// redactURL is u fit to show: every query value, the userinfo and the
// fragment replaced, since a game's join token or credentials travel there.
// The path stays (it says which endpoint was dialled). A query pair that
// does not parse is dropped, never shown.
func redactURL(u *url.URL) string {
	r := *u
	if r.User != nil {
		r.User = url.User(redacted)
	}
	if r.Fragment != "" || r.RawFragment != "" {
		r.Fragment, r.RawFragment = redacted, ""
	}
	if r.RawQuery != "" || r.ForceQuery {
		q, _ := url.ParseQuery(r.RawQuery)
		for _, vs := range q {
			for i := range vs {
				vs[i] = redacted
			}
		}
		r.RawQuery = q.Encode()
	}
	return r.String()
}

// redact is a Connect address fit to show (redactURL); one that is not a
// URL keeps what comes before a query or userinfo could start.
func redact(addr string) string {
	if u, err := url.Parse(addr); err == nil {
		return redactURL(u)
	}
	if i := strings.IndexAny(addr, "?#@"); i >= 0 {
		return addr[:i] + "…" + redacted
	}
	return addr
}

// dialCause is why a dial failed, fit to show and short: the HTTP status
// a server refused the upgrade with, or the error below the HTTP request.
// That error's own text would name the URL, query and all (url.Error), so
// the request's layer is left out, and anything else that repeats the
// query or the userinfo has them redacted.
func dialCause(u *url.URL, resp *http.Response, err error) string {
	if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
		return fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	why := err.Error()
	for _, secret := range []string{u.RawQuery, u.User.String(), u.Fragment} {
		if secret != "" {
			why = strings.ReplaceAll(why, secret, redacted)
		}
	}
	return why
}

// dialPeer connects p to u and serves it until it ends.
func (h *Host) dialPeer(p *peer, u *url.URL) {
	var remote string
	ctx, cancel := context.WithTimeout(context.WithValue(p.ctx, remoteKey{}, &remote), min(handshakeTimeout, h.opt.Timeout))
	conn, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{HTTPClient: h.client, HTTPHeader: h.header, CompressionMode: websocket.CompressionDisabled})
	cancel()
	if resp != nil && resp.Body != nil && err != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		why := dialCause(u, resp, err)
		h.st.dialFailures.Add(1)
		setLast(&h.st.lastDialError, fmt.Errorf("%s: dial %s: %s", h.name, redactURL(u), why))
		h.push(event{Event: transport.Event{Kind: transport.EventDisconnect, Peer: p.id, Data: p.reason(context.Canceled), Payload: []byte(why)}, p: p})
		return
	}
	p.conn.Store(conn)
	p.remote.Store(&remote)
	h.push(event{Event: transport.Event{Kind: transport.EventConnect, Peer: p.id}, p: p})
	p.serve(conn)
}
