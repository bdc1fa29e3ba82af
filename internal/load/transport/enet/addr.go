package enet

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// parseAddr turns "ip:port" into an IPv4 address and port; ENet speaks IPv4
// only. An empty host or "0.0.0.0" means every local interface; a name is
// resolved and its first IPv4 address used.
func parseAddr(addr string) (netip.Addr, uint16, error) {
	return parseAddrWith(addr, net.LookupIP)
}

// parseAddrWith is parseAddr with the name lookup given (tests and fuzzing
// must not query DNS).
func parseAddrWith(addr string, lookup func(string) ([]net.IP, error)) (netip.Addr, uint16, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("address %q: port %q is not a number in 0..65535", addr, portStr)
	}
	if host == "" {
		return netip.IPv4Unspecified(), uint16(port), nil
	}
	ip, err := resolveIPv4(host, lookup)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("address %q: %w", addr, err)
	}
	return ip, uint16(port), nil
}

// resolveIPv4 accepts a literal IPv4 address or a name with an IPv4 address.
func resolveIPv4(host string, lookup func(string) ([]net.IP, error)) (netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if !ip.Is4() {
			return netip.Addr{}, fmt.Errorf("%s is not an IPv4 address (ENet is IPv4 only)", host)
		}
		return ip, nil
	}
	ips, err := lookup(host)
	if err != nil {
		return netip.Addr{}, err
	}
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			return netip.AddrFrom4([4]byte(v4)), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%s has no IPv4 address (ENet is IPv4 only)", host)
}
