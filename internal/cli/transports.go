package cli

// The scalegate binary speaks every transport: `serve` listens on, and
// `swarm` dials, whichever one --transport names. Each backend registers
// itself when its package is linked; the swarm engine and its command line
// link none, so a team's bot (package bot) carries only the transports it
// imports.
import (
	_ "github.com/scalegate/scalegate/internal/load/transport/enet" // registers "enet" (with cgo)
	_ "github.com/scalegate/scalegate/internal/load/transport/quic" // registers "quic"
	_ "github.com/scalegate/scalegate/internal/load/transport/udp"  // registers "udp" (Linux)
	_ "github.com/scalegate/scalegate/internal/load/transport/ws"   // registers "ws" and "wss"
)
