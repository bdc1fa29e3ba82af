//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// errAgain means the socket had nothing to read, or no room to write.
var errAgain = errors.New("udp: would block")

// eintrRetries bounds the retries of a syscall interrupted by a signal
// (Go's preemption signal can land in one).
const eintrRetries = 8

// sock is the host's socket as the owner goroutine drives it: raw
// non-blocking recvfrom/sendto on the descriptor of a net.UDPConn. The Go
// network poller never parks the owner (Service and Send must not block),
// and no call allocates: the source address is parsed from a sockaddr kept
// in the host, and every peer keeps its destination sockaddr ready-made.
// The descriptor stays valid until the UDPConn is closed, which only the
// owner does (Host.Close), so no other goroutine can race these calls.
type sock struct {
	conn   *net.UDPConn
	fd     uintptr
	family int // unix.AF_INET or unix.AF_INET6 (dual-stack)
	rsa    unix.RawSockaddrAny
	rsaLen uint32
}

// dest is a ready-made destination sockaddr: an IPv4 sockaddr_in, or a
// sockaddr_in6 (IPv4 destinations in their mapped form on a dual-stack
// socket).
type dest struct {
	sa  unix.RawSockaddrInet6
	len uint32
}

// newSock takes over conn's descriptor and learns its address family.
func newSock(conn *net.UDPConn) (*sock, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("udp: socket descriptor: %w", err)
	}
	s := &sock{conn: conn}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		s.fd = fd
		s.family, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_DOMAIN)
	}); err != nil {
		return nil, fmt.Errorf("udp: socket descriptor: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("udp: socket family: %w", serr)
	}
	return s, nil
}

// dest builds the destination sockaddr for ap, or says why this socket
// cannot reach it (an IPv6 address from an IPv4-only socket).
func (s *sock) dest(ap netip.AddrPort) (dest, error) {
	var d dest
	a := ap.Addr().Unmap()
	port := ap.Port()
	if s.family == unix.AF_INET {
		if !a.Is4() {
			return d, fmt.Errorf("udp: %s is not IPv4, and the host's socket (%s) is", ap, s.conn.LocalAddr())
		}
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&d.sa))
		sa.Family = unix.AF_INET
		putPort(&sa.Port, port)
		sa.Addr = a.As4()
		d.len = unix.SizeofSockaddrInet4
		return d, nil
	}
	d.sa.Family = unix.AF_INET6
	putPort(&d.sa.Port, port)
	d.sa.Addr = a.As16() // IPv4 as ::ffff:a.b.c.d
	d.len = unix.SizeofSockaddrInet6
	return d, nil
}

// putPort stores port in network byte order.
func putPort(p *uint16, port uint16) {
	b := (*[2]byte)(unsafe.Pointer(p))
	b[0], b[1] = byte(port>>8), byte(port)
}

func getPort(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// recv reads one datagram into buf without blocking. n is the datagram's
// real length (MSG_TRUNC): n > len(buf) means it was cut and must be
// dropped. errAgain means nothing was waiting.
func (s *sock) recv(buf []byte) (n int, from netip.AddrPort, err error) {
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	for range eintrRetries {
		s.rsaLen = unix.SizeofSockaddrAny
		r, _, e := unix.Syscall6(unix.SYS_RECVFROM, s.fd, uintptr(p), uintptr(len(buf)),
			unix.MSG_DONTWAIT|unix.MSG_TRUNC, uintptr(unsafe.Pointer(&s.rsa)), uintptr(unsafe.Pointer(&s.rsaLen)))
		switch e {
		case 0:
			return int(r), s.from(), nil
		case unix.EAGAIN:
			return 0, netip.AddrPort{}, errAgain
		case unix.EINTR:
			continue
		default:
			return 0, netip.AddrPort{}, fmt.Errorf("udp: recvfrom on %s: %w", s.conn.LocalAddr(), syscall.Errno(e))
		}
	}
	return 0, netip.AddrPort{}, errAgain
}

// stampOn turns the socket's kernel receive stamps on: the first
// SIOCGSTAMPNS does, and fails with nothing stamped yet.
func (s *sock) stampOn() { s.stamp() }

// stamp is the kernel's arrival time of the datagram recv read last; zero
// when the kernel has none (stampOn not called).
func (s *sock) stamp() time.Time {
	var ts unix.Timespec
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, s.fd, unix.SIOCGSTAMPNS, uintptr(unsafe.Pointer(&ts))); e != 0 {
		return time.Time{}
	}
	return time.Unix(ts.Unix())
}

// from parses the source address recv left in s.rsa.
func (s *sock) from() netip.AddrPort {
	switch s.rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&s.rsa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), getPort(&sa.Port))
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&s.rsa))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), getPort(&sa.Port))
	}
	return netip.AddrPort{}
}

// lastDest is the destination that answers the datagram recv just read:
// the kernel's own sockaddr, scope id included.
func (s *sock) lastDest() dest {
	var d dest
	d.len = min(s.rsaLen, uint32(unsafe.Sizeof(d.sa)))
	copy((*[unsafe.Sizeof(d.sa)]byte)(unsafe.Pointer(&d.sa))[:d.len], (*[unix.SizeofSockaddrAny]byte)(unsafe.Pointer(&s.rsa))[:d.len])
	return d
}

// send writes b as one datagram to d without blocking. errAgain means the
// socket's send buffer was full and the datagram was not sent.
func (s *sock) send(b []byte, d *dest) error {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	for range eintrRetries {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, s.fd, uintptr(p), uintptr(len(b)),
			unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&d.sa)), uintptr(d.len))
		switch e {
		case 0:
			return nil
		case unix.EAGAIN, unix.ENOBUFS:
			return errAgain
		case unix.EINTR:
			continue
		default:
			return syscall.Errno(e)
		}
	}
	return errAgain
}

// close closes the socket (and its descriptor).
func (s *sock) close() error { return s.conn.Close() }
