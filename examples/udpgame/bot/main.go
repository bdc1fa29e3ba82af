// Command bot is the udpgame bot swarm. It is the udpgame protocol (package
// udpgame) turned into a swarm binary with the flags and report of
// `scalegate swarm`, so the gate runs it in place of the built-in swarm.
//
//	bot 127.0.0.1 7777 --clients 64 --duration 20 --json report.json
package main

import (
	"github.com/scalegate/scalegate/bot"
	"github.com/scalegate/scalegate/examples/udpgame"
)

func main() { bot.Main(udpgame.Game) }
