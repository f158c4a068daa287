//go:build !unix

package memory_test

import "time"

// processCPU is not measured here: cpu-ms reports 0.
func processCPU() time.Duration { return 0 }
