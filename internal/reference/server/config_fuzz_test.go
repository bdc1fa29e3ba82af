package server

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"
)

// FuzzParseConfig feeds arbitrary bytes to the config parser the server
// runs at startup and on every admin reload. It must never panic; an
// error is a *ConfigError naming the file and a key; an accepted config
// validates, and encoding it back to TOML parses to the same config.
//
//	go test -run='^$' -fuzz=FuzzParseConfig -fuzztime=60s ./internal/reference/server
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("[server]\nport = 7777\nmax_peers = 64\n[world]\noverrun_governor = true\n"))
	f.Add([]byte("[metrics]\nhttp_listen = \"127.0.0.1:9100\"\n"))
	f.Add([]byte("[network]\ncongestion_control = false\n[trace]\nmax_file_bytes = 38\n"))
	f.Add([]byte("[server]\nport = \"x\"\n"))
	f.Add([]byte("[bogus]\nkey = 1\n"))
	f.Add([]byte("port = 1e400\n"))
	f.Add([]byte("\x00\xff[[["))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseConfig("f.toml", b)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.File != "f.toml" || ce.Key == "" {
				t.Fatalf("error %v is not a ConfigError naming the file and a key", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted a config that does not validate: %v", err)
		}
		var out bytes.Buffer
		if err := toml.NewEncoder(&out).Encode(cfg); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := ParseConfig("f.toml", out.Bytes())
		if err != nil {
			t.Fatalf("re-encoded config does not parse: %v\n%s", err, out.Bytes())
		}
		if !reflect.DeepEqual(back, cfg) {
			t.Fatalf("round trip changed the config:\n%+v\n%+v", cfg, back)
		}
	})
}
