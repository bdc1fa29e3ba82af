package launcher

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// Expand replaces every {name} of vars in s. Unknown braces are left alone:
// a server's own template syntax survives.
func Expand(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

// ExpandAll applies Expand to every string inside v (maps, slices), so a
// custom server's config can carry {port} and {metrics_json} too. A string
// that is exactly one placeholder whose value is an integer ("{port}")
// becomes that integer, so `port: "{port}"` renders as a number.
func ExpandAll(v any, vars map[string]string) any {
	switch x := v.(type) {
	case string:
		if strings.HasPrefix(x, "{") && strings.HasSuffix(x, "}") {
			if val, ok := vars[x[1:len(x)-1]]; ok {
				if n, err := strconv.Atoi(val); err == nil {
					return n
				}
			}
		}
		return Expand(x, vars)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = ExpandAll(e, vars)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = ExpandAll(e, vars)
		}
		return out
	}
	return v
}

// RenderConfig encodes v in format: "toml", "json" or "yaml".
func RenderConfig(format string, v any) ([]byte, error) {
	var buf bytes.Buffer
	switch format {
	case "toml":
		if err := toml.NewEncoder(&buf).Encode(v); err != nil {
			return nil, fmt.Errorf("render TOML config: %w", err)
		}
	case "json":
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("render JSON config: %w", err)
		}
	case "yaml":
		enc := yaml.NewEncoder(&buf)
		if err := enc.Encode(v); err != nil {
			return nil, fmt.Errorf("render YAML config: %w", err)
		}
		if err := enc.Close(); err != nil {
			return nil, fmt.Errorf("render YAML config: %w", err)
		}
	default:
		return nil, fmt.Errorf("config format %q: want toml, json or yaml", format)
	}
	return buf.Bytes(), nil
}
