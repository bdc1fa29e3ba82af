// Package quic links the QUIC transport into a bot binary.
//
// A bot speaks the transports it imports, and no other: importing bot
// alone links none. Naming the transport by this package's Name is what
// imports it:
//
//	bot.Main(bot.Game{Name: "mygame/1", Transport: quic.Name, New: newBot})
//
// QUIC is quic-go, pure Go: bot.Reliable travels on one control stream,
// bot.Unreliable as a QUIC datagram. The bot does not verify the server's
// certificate (docs/transport-quic.md).
package quic

import (
	"github.com/scalegate/scalegate/internal/load/transport/quic" // registers "quic"
)

// Name is the transport's name in bot.Game.Transport and --transport.
const Name = quic.Name
