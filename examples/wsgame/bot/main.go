// Command bot is the wsgame bot swarm. It is the wsgame protocol (package
// wsgame) turned into a swarm binary with the flags and report of
// `scalegate swarm`.
//
//	bot 127.0.0.1 8080 --transport ws --clients 64 --duration 20 --json report.json
package main

import (
	"github.com/scalegate/scalegate/bot"
	"github.com/scalegate/scalegate/examples/wsgame"
)

func main() { bot.Main(wsgame.Game) }
