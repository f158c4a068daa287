// Package reliability holds toolsvc's reliability and security suite: tests
// that drive the real server (in process through testserver, or the built
// binary on loopback ports) with hostile input over every transport, JWT
// and tenant attacks, SIGKILL crashes, failing dependencies, load, overload
// and graceful shutdown. It has no library code: everything is in _test.go
// files, and docs/RELIABILITY.md records each scenario with its last result
// and the command that produced it.
//
// The fast scenarios run with `go test ./internal/tests/reliability/...` (and so
// in `make test`); the long ones need TOOLSVC_SOAK=1 (`make soak`) or
// TOOLSVC_CRASHTEST=1 (`make crashtest`) and are skipped with a message
// otherwise.
package reliability
