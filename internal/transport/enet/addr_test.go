package enet

import (
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
