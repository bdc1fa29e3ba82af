// Package udp links the raw UDP transport into a bot binary.
//
// A bot speaks the transports it imports, and no other: importing bot
// alone links none, so a raw UDP bot builds without cgo and without the
// QUIC and WebSocket libraries. Naming the transport by this package's
// Name is what imports it:
//
//	bot.Main(bot.Game{Name: "tiny/1", Transport: udp.Name, New: newBot})
//
// A bot that should also run over another transport (--transport) imports
// that one's package too, for its side effect if nothing else:
//
//	import _ "github.com/scalegate/scalegate/bot/transport/ws"
//
// Raw UDP sends every message as one plain datagram, both Deliveries alike:
// no handshake (Connected is called at once), no reliability (your
// protocol resends its join: bot.Waiter), no disconnect message and no
// round-trip estimate. It is Linux only; elsewhere the package links but
// --transport udp is refused, naming what the build can speak.
package udp

import (
	"github.com/scalegate/scalegate/internal/load/transport/udp" // registers "udp" (Linux)
)

// Name is the transport's name in bot.Game.Transport and --transport.
const Name = udp.Name
