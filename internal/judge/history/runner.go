package history

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strings"
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

// ThisRunner describes this machine: the CPU model from /proc/cpuinfo,
// the cores Go may use and the kernel release ("unknown" where the
// platform does not say).
func ThisRunner() Runner {
	r := Runner{CPU: "unknown", Cores: runtime.NumCPU(), Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		r.CPU = cpuModel(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		r.Kernel = strings.TrimSpace(string(b))
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
