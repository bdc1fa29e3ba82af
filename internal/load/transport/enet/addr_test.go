package enet

import (
	"net"
	"net/netip"
	"testing"
)

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in       string
		wantIP   string
		wantPort uint16
		wantErr  bool
	}{
		{"127.0.0.1:7777", "127.0.0.1", 7777, false},
		{"127.0.0.1:0", "127.0.0.1", 0, false},
		{":9000", "0.0.0.0", 9000, false},
		{"0.0.0.0:1", "0.0.0.0", 1, false},
		{"localhost:5", "127.0.0.1", 5, false},
		{"[::ffff:127.0.0.1]:5", "127.0.0.1", 5, false},
		{"[::1]:5", "", 0, true},
		{"127.0.0.1", "", 0, true},
		{"127.0.0.1:65536", "", 0, true},
		{"127.0.0.1:-1", "", 0, true},
		{"127.0.0.1:http", "", 0, true},
		{"", "", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			ip, port, err := parseAddr(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("parseAddr(%q) = %v:%d, want an error", tc.in, ip, port)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseAddr(%q): %v", tc.in, err)
			}
			if ip != netip.MustParseAddr(tc.wantIP) || port != tc.wantPort {
				t.Errorf("parseAddr(%q) = %v:%d, want %s:%d", tc.in, ip, port, tc.wantIP, tc.wantPort)
			}
		})
	}
}

// FuzzParseAddr: any string either fails or yields an IPv4 address whose
// "ip:port" form parses back to the same thing; it never panics.
func FuzzParseAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:7777", ":0", "[::1]:5", "a:b:c", "host:65535", "1.2.3.4:99999", "[::ffff:1.2.3.4]:1"} {
		f.Add(s)
	}
	noDNS := func(string) ([]net.IP, error) { return []net.IP{net.IPv4(10, 0, 0, 1)}, nil }
	f.Fuzz(func(t *testing.T, s string) {
		ip, port, err := parseAddrWith(s, noDNS)
		if err != nil {
			return
		}
		if !ip.Is4() {
			t.Fatalf("parseAddr(%q) = %v, not IPv4", s, ip)
		}
		back := netip.AddrPortFrom(ip, port).String()
		ip2, port2, err := parseAddrWith(back, noDNS)
		if err != nil || ip2 != ip || port2 != port {
			t.Fatalf("%q → %s → %v:%d (%v)", s, back, ip2, port2, err)
		}
	})
}
