// Package ratelimit decides whether a tool call may run under a "maxCalls per windowMs" limit (docs/CONTRACTS.md,
// The checklist).
//
// Every limiter here implements the same sliding-window-log algorithm: a call is admitted when fewer than
// Limit.Max calls were admitted for the same key in the trailing Limit.Window. The log is exact — N per window
// admits exactly N, never N+1 at a window boundary as a fixed-window counter can — and it yields a precise
// RetryAfter: the moment the oldest admission that still counts leaves the window. The cost is memory
// proportional to Max per active key, which is small for tool limits (tens to a few thousand calls per window).
//
// Memory keeps the log in process and bounds its memory by capping the number of keys. Redis keeps it in a sorted
// set updated by one Lua script per call using the Redis server clock, so several replicas sharing a Redis admit
// exactly N between them. WithFallback decides what happens when that shared backend is unavailable.
package ratelimit
