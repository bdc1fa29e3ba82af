// Package ws is scalegate's WebSocket transport, for browser and io-style
// games.
//
// It provides "ws" (plain) and "wss" (TLS), on github.com/coder/websocket.
// Importing it registers both backends with package transport.
//
// One TCP connection per peer (a dialling host opens one per Connect, up to
// Options.MaxPeers, default 1: one per bot). A listening host serves HTTP on its address and upgrades
// requests for Options.Path ("/" by default); other paths get 404 and count
// as Stats.Rejected. What the Host contract means here (the backends'
// transport.Capabilities say the same):
//
//   - Messages: Reliable and Unreliable both travel as binary messages over
//     TCP, so both are reliable and ordered, and both arrive as Reliable;
//     Text travels as a text message and arrives as Text (the sender
//     guarantees UTF-8; the host does not check it). A full send queue
//     (maxQueuedSends) drops an Unreliable message, counted, and refuses a
//     Reliable or Text one.
//   - Connect takes a URL with the host's scheme ("ws://host:port/path?q",
//     "wss://...") or "host:port" (then Options.Path). EventConnect follows
//     the HTTP upgrade, which carries Options.Header; the connect data word
//     is not carried (the server's EventConnect has Data 0). A dial that
//     fails ends in EventDisconnect (ReasonTimeout) whose Payload says why:
//     "HTTP 403 Forbidden" for a refused upgrade, else the network or TLS
//     error. Neither it, nor an error, nor Stats.LastDialError shows the
//     query's values, the userinfo or a header: a game's join secrets
//     travel there.
//   - Disconnect(peer, reason) writes what is queued, then a close frame
//     with status 1000 and the reason in decimal as its text; both ends'
//     EventDisconnect carry the reason. A close frame from a server that is
//     not scalegate's arrives as its status code (1001 going away, a
//     4000-4999 application code), with its reason text as the Payload. A connection that breaks without a
//     close frame, or whose ping goes unanswered for Options.Timeout
//     (default 30 s; each end pings every second, or every Timeout/3 when
//     shorter), reports ReasonTimeout.
//   - Limits: a message over Options.MaxRecvMessage (default 1 MiB) closes
//     the connection with status 1009, counted in Stats.Oversized; a frame
//     that breaks RFC 6455 closes it with status 1002, counted in
//     Stats.ProtocolErrors; the EventDisconnect carries 1009 or 1002.
//   - RTT: the smoothed round trip of the pings (1/8 gain), which includes
//     the remote's read loop; 0 before the first pong.
//   - Wire bytes are counted at the TCP socket: WebSocket framing (2-14
//     bytes a frame, the client's 4-byte mask), pings, the HTTP upgrade and,
//     for wss, every TLS byte (records and handshakes) are in; TCP/IP
//     headers are not. WireRates' datagram rates are socket writes and
//     reads that moved data, since TCP keeps no datagrams.
//   - wss servers use Options.CertFile/KeyFile, or generate a self-signed
//     certificate for 127.0.0.1, ::1 and localhost; wss clients verify the
//     server's certificate against the system roots plus Options.CAFile.
//
// The library's calls block, so each connection has three goroutines: a
// reader (which also ends the connection and reports it), a writer that
// Send's queue wakes on Service or Flush, and a pinger. They hand events to
// the owner through the host's queue; a reader stops reading while
// Options.MaxRecvWaiting bytes (default 4 MiB) wait for Service, so TCP
// pushes back (Stats.RecvStalls). Close stops and waits for all of them.
// The impairment relay works on datagrams and cannot impair a TCP
// connection: transport.CheckImpairable refuses these backends.
package ws
