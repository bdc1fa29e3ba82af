// Package ws links the WebSocket transports, ws and wss, into a bot binary.
//
// A bot speaks the transports it imports, and no other: importing bot
// alone links none. Naming the transport by this package's Name (or
// NameTLS) is what imports it:
//
//	bot.Main(bot.Game{Name: "wsgame/1", Transport: ws.Name, New: newBot})
//
// Each bot opens one TCP connection and upgrades it at the path "/" of the
// server's host:port, unless bot.Game.Target gives it its own URL (a path,
// a join token in the query) and bot.Game.Header its own request headers
// (a cookie, an Authorization). Both Deliveries travel as binary messages,
// bot.Text as a text message. A server that refuses the upgrade is
// reported with its HTTP status ("connect_error (HTTP 403 Forbidden)"), one
// that closes the connection before admitting the bot with an application
// close code (4000-4999) as a refusal under that code and its reason text
// (bot.CloseReader maps codes to your own reasons). Query values and header
// values never reach the report, the terminal or an error: they are join
// secrets.
//
// wss verifies the server's certificate against the system's roots;
// a server with a self-signed one needs its CA in SSL_CERT_FILE.
package ws

import (
	"github.com/scalegate/scalegate/internal/load/transport/ws" // registers "ws" and "wss"
)

// Names of the two transports in bot.Game.Transport and --transport:
// plain WebSocket and WebSocket over TLS.
const (
	Name    = ws.Name
	NameTLS = ws.NameTLS
)
