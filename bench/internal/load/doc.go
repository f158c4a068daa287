// Package load runs a closed-loop concurrency sweep against one target:
// for each concurrency level, a warm-up and then a bounded measurement
// during which that many workers call the target back to back. It reports
// throughput, latency percentiles, errors by code and, for a local server
// process, CPU time per request and peak RSS; it finds the knee of the
// throughput curve and the best concurrency under latency SLOs.
//
// Every loop is bounded twice, by time and by a request budget, so a run
// always ends by itself.
package load
