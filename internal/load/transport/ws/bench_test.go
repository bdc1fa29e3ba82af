package ws

import (
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// BenchmarkSendReceive is one message client → server, send and receive,
// beside the same benchmark of the other backends (transporttest): here it
// crosses the writer and reader goroutines and the TCP connection.
func BenchmarkSendReceive(b *testing.B) {
	transporttest.RunSendReceive(b, Name, transporttest.Config{})
}

// BenchmarkSendReceiveTLS is the same over wss.
func BenchmarkSendReceiveTLS(b *testing.B) {
	cert, key, ca := writeCert(b)
	transporttest.RunSendReceive(b, NameTLS, transporttest.Config{
		Server: transportOptions(cert, key, ""), Client: transportOptions("", "", ca)})
}
