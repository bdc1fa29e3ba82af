package ws

import "github.com/scalegate/scalegate/internal/load/transport"

func transportOptions(cert, key, ca string) transport.Options {
	return transport.Options{CertFile: cert, KeyFile: key, CAFile: ca}
}
