package paging

// ResetPurge forgets when this process last purged, so a test's save
// purges.
func ResetPurge() { lastPurge.Store(0) }
