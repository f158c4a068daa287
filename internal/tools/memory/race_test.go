//go:build race

package memory_test

// raceEnabled: the race detector slows SQLite many times over, so the
// retrieval test scores a slice of its pairs (make eval runs them all).
const raceEnabled = true
