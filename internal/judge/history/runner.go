package history

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// ClassEnv names the environment variable that, when set, is the runner
// class of the records a run appends, in place of Runner.Class.
const ClassEnv = "SCALEGATE_RUNNER_CLASS"

// Runner is the machine a record was measured on.
type Runner struct {
	CPU    string `json:"cpu"`
	Cores  int    `json:"cores"`
	Kernel string `json:"kernel"`
}

// maxCPUInfoBytes bounds the /proc/cpuinfo read (a few KiB per core).
const maxCPUInfoBytes = 4 << 20

// ThisRunner is the runner of a machine with cores cores and kernel release
// kernel (what metadata.json's host already says), with the CPU model from
// /proc/cpuinfo, read under a byte cap ("unknown" where the platform does
// not say).
func ThisRunner(ctx context.Context, cores int, kernel string) Runner {
	r := Runner{CPU: "unknown", Cores: cores, Kernel: cmp.Or(kernel, "unknown")}
	if b, err := boundedfile.ReadFile(ctx, "/proc/cpuinfo", maxCPUInfoBytes); err == nil {
		r.CPU = cpuModel(string(b))
	}
	return r
}

// cpuModel is the first "model name" of a /proc/cpuinfo (arm64 kernels
// write none: "CPU part" then, else "unknown").
func cpuModel(info string) string {
	var part string
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			return strings.Join(strings.Fields(v), " ")
		case "CPU part":
			if part == "" {
				part = "CPU part " + strings.TrimSpace(v)
			}
		}
	}
	if part != "" {
		return part
	}
	return "unknown"
}

// Class is the runner class: two records compare only when their CPU
// model, cores and kernel all match. It reads "<cpu> · <n> cores · <kernel>".
func (r Runner) Class() string {
	return fmt.Sprintf("%s · %d cores · %s", r.CPU, r.Cores, r.Kernel)
}

// ClassID is a short name for a class (8 hex digits of its sha256), which
// --runner-class accepts in its place.
func ClassID(class string) string {
	sum := sha256.Sum256([]byte(class))
	return hex.EncodeToString(sum[:4])
}
