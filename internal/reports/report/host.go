package report

// Host is what else the machine was doing while a leg ran (docs/host-contention.md): the CPU
// that processes outside the run's own process tree used, the CPU the hypervisor withheld
// (steal), and the kernel's CPU pressure. The gate process samples it once a second; the three
// keys other_cores, steal_pct and cpu_pressure_avg10 summarise the hold (the leg's measured
// stretch), Series has them per second.
//
// A figure the machine does not report is null, with the reason in Missing under the figure's
// key: a kernel without pressure stall information, a /proc/stat without the steal column, a
// platform without /proc. Never zero: a zero means the figure was measured and was zero.
type Host struct {
	// OtherCores is the CPU used by processes outside the run's tree, in cores (1 = one CPU
	// busy for the whole second): the mean is total CPU-seconds over the hold's wall seconds,
	// the max the busiest second.
	OtherCores *MeanMax `json:"other_cores"`
	// StealPct is the share of the machine's CPU time the hypervisor gave to someone else,
	// in percent of all CPUs' time (0..100).
	StealPct *MeanMax `json:"steal_pct"`
	// CPUPressureAvg10 is /proc/pressure/cpu "some avg10": the percentage of the last 10 s in
	// which at least one runnable task waited for a CPU, as the kernel averages it. It counts
	// the run's own tasks too, so it is high on a machine the run itself saturates.
	CPUPressureAvg10 *MeanMax `json:"cpu_pressure_avg10"`
	// OwnCores is the CPU the run's own tree used, in cores, for comparison.
	OwnCores *MeanMax `json:"own_cores"`
	// CPUs is how many CPUs /proc/stat lists (0: not read).
	CPUs int `json:"cpus"`
	// HoldFromS and HoldToS bound the hold on the leg's clock (Series' t_s); HoldSamples is
	// how many one-second samples fell in it.
	HoldFromS   float64 `json:"hold_from_s"`
	HoldToS     float64 `json:"hold_to_s"`
	HoldSamples int     `json:"hold_samples"`
	// Missing maps a figure's key (other_cores, own_cores, steal_pct, cpu_pressure_avg10) to
	// why it is null, or why some of its seconds are.
	Missing map[string]string `json:"missing,omitempty"`
	// Series is every sample of the leg, in time order.
	Series []HostPoint `json:"series,omitempty"`
}

// HostPoint is one second of Host: figures over the interval that ends at TS, null where not
// measured.
type HostPoint struct {
	TS               float64  `json:"t_s"`
	OtherCores       *float64 `json:"other_cores"`
	StealPct         *float64 `json:"steal_pct"`
	CPUPressureAvg10 *float64 `json:"cpu_pressure_avg10"`
	OwnCores         *float64 `json:"own_cores"`
}

// Keys of Host's figures, as in JSON and Host.Missing.
const (
	HostOtherCores       = "other_cores"
	HostOwnCores         = "own_cores"
	HostStealPct         = "steal_pct"
	HostCPUPressureAvg10 = "cpu_pressure_avg10"
)
