package relay

import (
	"encoding/binary"
	"net"
	"syscall"
)

// watchKernelDrops asks the kernel to attach the socket's drop counter
// (SO_RXQ_OVFL) to every received datagram, so the relay can count the
// datagrams its own full receive buffer lost.
func watchKernelDrops(c *net.UDPConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, 1)
	})
}

// kernelDrops adds the drops the kernel reported since the last datagram
// to the overflow count.
func (l *link) kernelDrops(oob []byte) {
	if len(oob) == 0 {
		return
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return
	}
	for _, m := range msgs {
		if m.Header.Level != syscall.SOL_SOCKET || m.Header.Type != syscall.SO_RXQ_OVFL || len(m.Data) < 4 {
			continue
		}
		n := binary.NativeEndian.Uint32(m.Data)
		if d := n - l.rxDrops; d > 0 {
			l.r.c.overKernel.Add(int64(d))
		}
		l.rxDrops = n
	}
}
