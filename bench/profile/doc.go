// Package profile holds in-process benchmarks of the real toolsvc wiring,
// run with -cpuprofile by `make bench` to explain where a call's time goes.
package profile
