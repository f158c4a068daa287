// Package drivers turns one call of a tool (or of a baseline's echo) over
// gRPC, REST or MCP Streamable HTTP into a load.Target. Drivers refuse any
// target that is not a loopback address: the load tool must never be
// pointed at someone else's service.
package drivers
