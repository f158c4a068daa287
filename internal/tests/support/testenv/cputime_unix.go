//go:build unix

package testenv

import (
	"syscall"
	"time"
)

// ProcessCPU is the user and system CPU time this process has used so
// far, all goroutines included (0 where it cannot be read): benchmarks
// divide its growth by their operations to report CPU per operation,
// which moves much less than latency on a shared machine.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
