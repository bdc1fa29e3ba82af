// Package boundedhttp serves scalegate's HTTP with a server no client can
// hold open. It is the one way scalegate serves HTTP (the reference server's
// metrics document, its Prometheus exposition). Left to net/http's defaults,
// an endpoint keeps every idle keep-alive connection forever; ~20,000 idle
// connections after one GET each exhausted the server's descriptors, after
// which its metrics file went stale and its admin socket stopped answering.
//
// A Server here:
//
//   - binds loopback unless told otherwise: "PORT" is 127.0.0.1:PORT,
//     ":PORT" every interface (ResolveAddr), "HOST:PORT" that host;
//   - times out every phase of a connection: the request header
//     (ReadHeaderTimeout), the whole request, the answer, and a keep-alive
//     connection left idle (IdleTimeout), with a cap on header bytes;
//   - holds at most MaxConns connections. At the cap a new connection
//     evicts the connection that has been idle (or silent since it
//     connected) the longest; only when every held connection is busy
//     answering a request is the new one refused (closed at once). A crowd
//     of idle connections can therefore never lock a real reader out, and
//     the descriptors it costs stay bounded.
package boundedhttp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Options.
const (
	DefaultMaxConns          = 64
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultIdleTimeout       = 30 * time.Second
	DefaultMaxHeaderBytes    = 8 << 10
	// shutdownGrace bounds how long Close lets answers in flight finish.
	shutdownGrace = 2 * time.Second
)

// Options bound one server; a zero field takes its default.
type Options struct {
	MaxConns          int
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
}

func (o *Options) defaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&o.ReadTimeout, DefaultReadTimeout)
	def(&o.WriteTimeout, DefaultWriteTimeout)
	def(&o.IdleTimeout, DefaultIdleTimeout)
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
}

// ResolveAddr turns a listen address as a user writes it into the one to
// bind: "9100" is 127.0.0.1:9100 (loopback, the default), ":9100" every
// interface, "HOST:9100" that host. HOST must be an IP address (a name
// could resolve to anything). The port must be 0..65535.
func ResolveAddr(addr string) (string, error) {
	if p, err := strconv.Atoi(addr); err == nil {
		if p < 0 || p > 65535 {
			return "", fmt.Errorf("port %d out of range 0..65535", p)
		}
		return net.JoinHostPort("127.0.0.1", addr), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q: want PORT (loopback), :PORT (every interface) or IP:PORT", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return "", fmt.Errorf("%q: port must be a number 0..65535", addr)
	}
	if host != "" && net.ParseIP(host) == nil {
		return "", fmt.Errorf("%q: the host must be an IP address, not a name", addr)
	}
	return addr, nil
}

// AllInterfaces reports whether a resolved address binds every interface
// (":PORT", 0.0.0.0 or ::): reachable from the network, not just this
// machine.
func AllInterfaces(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || ip != nil && ip.IsUnspecified()
}

// Stats are a server's connection counts.
type Stats struct {
	Open    int   // connections held now
	Evicted int64 // idle or silent connections closed to admit a new one
	Refused int64 // new connections closed because every held one was busy
}

// Server is a bounded HTTP server on its own listener.
type Server struct {
	ln   *limiter
	srv  *http.Server
	done chan struct{} // closed when Serve returns
	once sync.Once
}

// Listen binds addr (see ResolveAddr) and serves h on it until Close.
func Listen(addr string, h http.Handler, opt Options) (*Server, error) {
	opt.defaults()
	resolved, err := ResolveAddr(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", resolved)
	if err != nil {
		return nil, err
	}
	lim := &limiter{Listener: ln, max: opt.MaxConns, conns: map[net.Conn]*held{}}
	s := &Server{ln: lim, done: make(chan struct{}), srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opt.ReadHeaderTimeout,
		ReadTimeout:       opt.ReadTimeout,
		WriteTimeout:      opt.WriteTimeout,
		IdleTimeout:       opt.IdleTimeout,
		MaxHeaderBytes:    opt.MaxHeaderBytes,
		ConnState:         lim.connState,
	}}
	go func() {
		defer close(s.done)
		// Serve returns ErrServerClosed on Close; anything else ends the
		// endpoint, and readers then see it missing (never zeros).
		_ = s.srv.Serve(lim)
	}()
	return s, nil
}

// Addr is the bound address (the port resolved when the address gave 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Stats returns the connection counts so far.
func (s *Server) Stats() Stats {
	s.ln.mu.Lock()
	open := len(s.ln.conns)
	s.ln.mu.Unlock()
	return Stats{Open: open, Evicted: s.ln.evicted.Load(), Refused: s.ln.refused.Load()}
}

// Close stops the server: answers in flight get up to 2 s to finish, then
// every connection is closed. It returns once the serving goroutine has
// ended; it is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
		<-s.done
	})
}

// held is one connection the limiter admitted.
type held struct {
	state http.ConnState
	since uint64 // order of admission or of going idle: smaller is older
}

// limiter admits at most max connections, evicting the longest-idle one
// to make room (see the package comment).
type limiter struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*held
	seq   uint64

	evicted, refused atomic.Int64
}

// Accept returns the next connection that could be admitted; ones that
// could not are closed and counted.
func (l *limiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
		// Counted before the close: whoever sees the connection end may
		// read Stats at once and must find it counted.
		l.refused.Add(1)
		c.Close()
	}
}

// admit makes room for c (evicting the longest-idle connection when at the
// cap) and tracks it; false when every held connection is busy.
func (l *limiter) admit(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) >= l.max {
		var victim net.Conn
		var oldest uint64
		for vc, h := range l.conns {
			if (h.state == http.StateNew || h.state == http.StateIdle) && (victim == nil || h.since < oldest) {
				victim, oldest = vc, h.since
			}
		}
		if victim == nil {
			return false
		}
		delete(l.conns, victim)
		l.evicted.Add(1) // before the close, like refused
		victim.Close()   // its serving goroutine sees the error and ends
	}
	l.seq++
	l.conns[c] = &held{state: http.StateNew, since: l.seq}
	return true
}

// connState follows each connection's state (http.Server.ConnState).
func (l *limiter) connState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.conns[c]
	if !ok {
		return // evicted already
	}
	switch st {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	case http.StateIdle:
		l.seq++
		h.state, h.since = st, l.seq
	default:
		h.state = st
	}
}
