// Package registry is toolsvc's tool registry (seed 000's ToolRegistry):
// built once at start-up from the descriptors of the registered gRPC
// services, where every RPC carrying the (toolsvc.v1.tool) option is a tool
// and nothing else is callable (seed 001's allowlist).
//
// New validates every definition against seed 000's verification checklist
// and refuses to start on any violation, naming the tool and the rule; it
// derives each tool's input and output JSON Schema from the message
// descriptors (package schema), keeps several versions of a tool side by
// side and resolves a bare name to the highest semantic version (seed 003).
package registry
