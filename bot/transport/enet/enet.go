// Package enet links the ENet transport into a bot binary; it needs cgo.
//
// A bot speaks the transports it imports, and no other: importing bot
// alone links none. Naming the transport by this package's Name is what
// imports it:
//
//	bot.Main(bot.Game{Name: "mygame/1", Transport: enet.Name, ConnectData: 7, New: newBot})
//
// ENet is the system's C libenet 1.3.17, bound with cgo: building the bot
// needs CGO_ENABLED=1, a C compiler and libenet (pkg-config libenet). A
// build without cgo links the package but not the library, and
// --transport enet is then refused, naming what the build can speak.
// bot.Reliable travels on ENet's reliable channel 0, bot.Unreliable on its
// unreliable sequenced channel 1; the connect carries Game.ConnectData.
package enet

import (
	"github.com/scalegate/scalegate/internal/load/transport/enet" // registers "enet" (with cgo)
)

// Name is the transport's name in bot.Game.Transport and --transport.
const Name = enet.Name
