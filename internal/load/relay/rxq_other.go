//go:build !linux

package relay

import "net"

// watchKernelDrops is Linux-only (SO_RXQ_OVFL); elsewhere the kernel's
// drops on relay sockets are not counted.
func watchKernelDrops(*net.UDPConn) {}

func (l *link) kernelDrops([]byte) {}
