package transport

// Capabilities say which parts of the Host contract a backend honours. The
// Host interface is ENet's shape (a handshake carrying a data word, reliable
// and unreliable channels, a disconnect the remote hears of); a backend that
// cannot do one of those says so here, and the conformance suite
// (transporttest) checks the behaviour documented for the false case instead
// of skipping the property. Callers that depend on a property (the impairment
// relay needs datagrams) read it with CapabilitiesOf.
type Capabilities struct {
	// Datagram: every message leaves as UDP datagrams between two UDP
	// sockets, so the impairment relay (internal/load/relay) can sit between
	// client and server and drop, delay or duplicate them. False for
	// backends over TCP (WebSocket), which the relay cannot impair.
	Datagram bool
	// Reliable: a Reliable message is acknowledged, retransmitted and
	// delivered in order. False on raw UDP, where Reliable and Unreliable
	// are the same plain datagram and a protocol must handle loss itself.
	Reliable bool
	// TaggedDelivery: the receiver learns the Delivery each message was
	// sent with (Event.Delivery is the sender's). False where the wire has
	// no room for it: see Arrives.
	TaggedDelivery bool
	// Text: Send accepts Delivery Text (a WebSocket text message).
	Text bool
	// ConnectData: Connect's data word reaches the server's EventConnect.
	// False: the server's EventConnect carries Data 0.
	ConnectData bool
	// Handshake: a client's EventConnect means the server answered, and a
	// Connect nobody answers ends in EventDisconnect(ReasonTimeout). False
	// (raw UDP): EventConnect follows Connect at once, and an unanswered
	// peer is disconnected by the idle timeout (Options.Timeout) like any
	// silent one.
	Handshake bool
	// DisconnectNotice: Disconnect tells the remote, whose EventDisconnect
	// carries the reason. False (raw UDP): only the local host delivers an
	// EventDisconnect; the remote learns of it by its idle timeout
	// (ReasonTimeout).
	DisconnectNotice bool
	// RTT: the backend measures a round trip (Host.RTT > 0 once traffic
	// flowed). False: RTT is always 0, never a guess.
	RTT bool
	// MessageDatagram: every message is one datagram and nothing else (no
	// framing, no acknowledgements of the backend's own), so the receiver
	// can count the link's IP and UDP headers from the messages it got:
	// raw UDP. False where the backend adds datagrams or bytes the
	// receiver does not see as messages.
	MessageDatagram bool
}

// Arrives is the Event.Delivery a receiver reports for a message sent with
// d: d itself where the backend tags deliveries, Text for Text, otherwise
// Reliable on a backend whose every message is reliable (a WebSocket binary
// message) and Unreliable on one where none is (a raw UDP datagram).
func (c Capabilities) Arrives(d Delivery) Delivery {
	switch {
	case c.TaggedDelivery, d == Text:
		return d
	case c.Reliable:
		return Reliable
	default:
		return Unreliable
	}
}
