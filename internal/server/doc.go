// Package server wires toolsvc together: configuration (Config.Complete),
// the store, the registry, the one interceptor chain, the gRPC server with
// health and reflection, the in-process channel the MCP bridge and REST
// gateway call through, the HTTP listener, and Run, which serves everything
// until its context ends and then shuts down gracefully.
package server
