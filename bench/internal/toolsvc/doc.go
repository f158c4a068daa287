// Package toolsvc is the load tool's knowledge of the product: it resolves
// a tool name to its gRPC method and REST route from the generated
// descriptors, writes an auth file of many API keys (so per-principal rate
// limits measure the chain rather than refuse the load), and starts and
// stops a `toolsvc serve` process on free loopback ports.
package toolsvc
