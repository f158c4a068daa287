//go:build !unix

package testenv

import "time"

// ProcessCPU is not measured here: it reports 0.
func ProcessCPU() time.Duration { return 0 }
