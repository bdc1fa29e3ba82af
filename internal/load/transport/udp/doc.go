// Package udp is scalegate's raw UDP transport ("udp") for a team's own
// protocol.
//
// That protocol runs straight on UDP datagrams and owns its reliability.
// Importing the package registers the backend with package transport (Linux
// only; elsewhere the package registers nothing, and
// transport.Lookup("udp") names what the build can speak).
//
// Every message is exactly one datagram with nothing added: the bytes Send
// is given are the UDP payload, and every datagram received is delivered as
// a message, whatever it holds (the protocol decides what is garbage).
// Because nothing is added, the transport has no handshake, no
// acknowledgements and no disconnect message, so parts of the
// transport.Host contract mean something narrower here (the backend's
// transport.Capabilities say which):
//
//   - Reliable and Unreliable are the same plain datagram; Reliable means
//     nothing. A protocol on raw UDP must handle loss, duplication and
//     reordering itself. Every message arrives as Unreliable.
//   - Connect sends nothing: EventConnect follows on the next Service (the
//     socket is ready), and its data word is not carried. A listening host
//     creates a peer, and delivers EventConnect with Data 0, on the first
//     datagram from a new address.
//   - A peer nothing was heard from for Options.Timeout (default
//     DefaultTimeout) is disconnected with ReasonTimeout. Disconnect only
//     forgets the peer locally (its EventDisconnect carries the reason); the
//     remote is not told and times out in turn.
//   - RTT is always 0 (there is nothing to time); QueuedSends is always 0
//     (Send writes at once).
//   - A message over MaxDatagram bytes is refused by Send (ErrTooLarge);
//     a received datagram over Options.MaxRecvMessage is dropped and
//     reported as EventMalformed.
//   - Wire bytes are the UDP payload bytes: the messages themselves, 0
//     bytes of framing (IP/UDP headers excluded, as for ENet and QUIC).
//
// A host has one socket (a dialling host one per bot) and no goroutines:
// Service reads the socket with non-blocking recvfrom and Send writes with
// non-blocking sendto, on the owner's goroutine, without allocating.
package udp
