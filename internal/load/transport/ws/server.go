package ws

import (
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// readHeaderTimeout bounds how long a connection may take to send its
// upgrade request's headers (a client that opens TCP and stays silent).
const readHeaderTimeout = 10 * time.Second

// listen starts a server host: an HTTP server on addr whose handler
// upgrades requests for the host's path.
func listen(name string, useTLS bool, addr string, opt transport.Options) (*Host, error) {
	h := newHost(name, opt)
	var tlsConf *tls.Config
	if useTLS {
		var err error
		if tlsConf, err = serverTLS(opt.CertFile, opt.KeyFile); err != nil {
			return nil, fmt.Errorf("%s: listen %s: %w", name, addr, err)
		}
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen %s: %w", name, addr, err)
	}
	h.addr = tcp.Addr().String()
	// Counting sits on the socket, below TLS: wss wire bytes include the
	// TLS records and handshakes.
	h.ln = &countingListener{Listener: tcp, w: &h.w}
	if useTLS {
		h.ln = tls.NewListener(h.ln, tlsConf)
	}
	h.srv = &http.Server{
		Handler:           http.HandlerFunc(h.handle),
		ReadHeaderTimeout: readHeaderTimeout,
		// net/http logs TLS handshake failures and the like; they are
		// counted as Rejected instead of printed.
		ErrorLog: log.New(rejectCounter{h}, "", 0),
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		_ = h.srv.Serve(h.ln) // returns http.ErrServerClosed on Close
	}()
	return h, nil
}

// rejectCounter counts what the HTTP server would have logged.
type rejectCounter struct{ h *Host }

func (r rejectCounter) Write(p []byte) (int, error) {
	r.h.st.rejected.Add(1)
	return len(p), nil
}

// handle upgrades one request and then serves the connection on this
// goroutine until it ends (net/http's goroutine for the connection, which
// the host waits for like its own).
func (h *Host) handle(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != h.path {
		h.st.rejected.Add(1)
		http.NotFound(w, r)
		return
	}
	if !h.join() {
		http.Error(w, "server closing", http.StatusServiceUnavailable)
		return
	}
	defer h.wg.Done()
	if h.opt.MaxPeers > 0 && int(h.live.Add(1)) > h.opt.MaxPeers {
		h.live.Add(-1)
		h.st.refusedFull.Add(1)
		http.Error(w, "server full", http.StatusServiceUnavailable)
		return
	}
	if h.opt.MaxPeers <= 0 {
		h.live.Add(1)
	}
	defer h.live.Add(-1)
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		h.st.rejected.Add(1) // Accept answered the request with the error
		return
	}
	p := h.newPeer()
	defer close(p.done)
	defer p.cancel()
	p.conn.Store(conn)
	remote := r.RemoteAddr
	p.remote.Store(&remote)
	h.push(event{Event: transport.Event{Kind: transport.EventConnect, Peer: p.id}, p: p})
	p.serve(conn)
}
