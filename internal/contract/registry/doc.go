// Package registry is toolsvc's tool registry (the tool contract's ToolRegistry):
// built once at start-up from the descriptors of the registered gRPC
// services, where every RPC carrying the (toolsvc.v1.tool) option is a tool
// and nothing else is callable (the allowlist: only listed tools are callable).
//
// New validates every definition against the checklist (docs/CONTRACTS.md)
// and refuses to start on any violation, naming the tool and the rule; it
// derives each tool's input and output JSON Schema from the message
// descriptors (package schema), keeps several versions of a tool side by
// side and resolves a bare name to the highest semantic version (docs/CONTRACTS.md).
package registry
