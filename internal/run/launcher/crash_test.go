package launcher

import (
	"context"
	"strings"
	"testing"
)

func TestCrashLine(t *testing.T) {
	long := strings.Repeat("x", 400)
	tests := []struct {
		name, script, want string
		code               int
	}{
		{"go panic", `echo started; echo 'panic: runtime error: argument of cgo function has Go pointer to unpinned Go pointer' >&2; echo '' >&2; echo 'goroutine 7 [running]:' >&2; exit 2`,
			"panic: runtime error: argument of cgo function has Go pointer to unpinned Go pointer", 2},
		{"fatal error", `echo 'fatal error: concurrent map writes' >&2; exit 2`, "fatal error: concurrent map writes", 2},
		{"usage error", `echo 'flag provided but not defined: -x' >&2; exit 2`, "", 2},
		{"first of two", `echo 'panic: first' >&2; echo '	panic: second' >&2; exit 2`, "panic: first", 2},
		{"long line cut", `echo 'panic: ` + long + `' >&2; exit 2`, "panic: " + long[:maxCrashLine-len("panic: ")] + "…", 2},
		{"panic word mid-line", `echo 'the bot did not panic: fine' >&2; exit 0`, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := startShell(t, context.Background(), tt.script, DefaultGrace)
			if got := p.ExitCode(); got != tt.code {
				t.Fatalf("exit %d, want %d", got, tt.code)
			}
			if got := p.CrashLine(); got != tt.want {
				t.Errorf("CrashLine() = %q, want %q", got, tt.want)
			}
		})
	}
}

// A crash far into a long log is still found: only the log's end is read,
// and the dump that follows a panic is what fills it.
func TestCrashLineAfterALongLog(t *testing.T) {
	script := `i=0; while [ $i -lt 20000 ]; do echo "line $i of a chatty swarm"; i=$((i+1)); done; echo 'panic: late' >&2; exit 2`
	p, _ := startShell(t, context.Background(), script, DefaultGrace)
	if got := p.CrashLine(); got != "panic: late" {
		t.Errorf("CrashLine() = %q, want %q", got, "panic: late")
	}
}
