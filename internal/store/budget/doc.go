// Package budget counts the units callers spend against their budgets
// (docs/OPERATIONS.md "Budgets"): fixed windows aligned to the epoch (a
// 24h window runs from 00:00 UTC to 00:00 UTC), each counter checked and
// charged in one atomic step, so N units per window admit exactly N units
// however many callers race. [Memory] counts in one process; [Redis]
// counts for every replica sharing a Redis and a key prefix.
package budget
