package ws

import "github.com/scalegate/scalegate/internal/transport"

func transportOptions(cert, key, ca string) transport.Options {
	return transport.Options{CertFile: cert, KeyFile: key, CAFile: ca}
}
