// Package e2e holds toolsvc's end-to-end tests: the real server wiring
// (package testserver) driven over every transport. The auth matrix is
// written once against the Transport interface and run over gRPC, MCP and
// REST, so the three transports provably answer the same.
package e2e
