package backend

import "time"

// Now returns the current time as the store records it: UTC, truncated to
// microseconds (PostgreSQL's precision) so both backends round-trip the
// same value.
func Now() time.Time { return Normalize(time.Now()) }

// Normalize converts t to the store's representation (see Now).
func Normalize(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// FromMicros converts microseconds since the Unix epoch to a store time.
func FromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
