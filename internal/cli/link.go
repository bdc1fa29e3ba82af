package cli

// The scalegate binary links every codec its commands may need, each of
// which registers itself when its package is linked: every transport, so
// `serve` listens on and `swarm` dials whichever one --transport names,
// and the decoder of the reference server's snapshot bodies, which
// `swarm` (load protocol v1) counts decode errors with. The swarm engine
// and its command line link none of them, so a team's bot (package bot)
// carries only the transports it imports and no snapshot codec.
import (
	_ "github.com/scalegate/scalegate/internal/load/swarm/bodydec/sgentities" // decodes sg-entities bodies (zstd)
	_ "github.com/scalegate/scalegate/internal/load/transport/enet"           // registers "enet" (with cgo)
	_ "github.com/scalegate/scalegate/internal/load/transport/quic"           // registers "quic"
	_ "github.com/scalegate/scalegate/internal/load/transport/udp"            // registers "udp" (Linux)
	_ "github.com/scalegate/scalegate/internal/load/transport/ws"             // registers "ws" and "wss"
)
