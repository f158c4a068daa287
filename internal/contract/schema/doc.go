// Package schema derives the JSON Schemas of toolsvc tools from their protobuf
// request and response descriptors, and checks them against the tool-schema
// rules of the LLM providers that consume them.
//
// A tool's MCP inputSchema/outputSchema, its REST documentation and its console
// form all come from [Derive], so they cannot drift from what the server
// enforces: the schema describes exactly the canonical JSON that protojson
// emits (lowerCamelCase names, 64-bit integers as strings, enums as names,
// well-known types in their JSON mapping), narrowed by the contract's
// protovalidate rules.
//
// The schemas are deliberately portable: every object is closed
// (additionalProperties false), every property has exactly one type, nested
// messages are inlined, and no anyOf/oneOf/allOf/$ref is ever emitted.
// [CheckProviders] reports where a schema still breaks a provider's rules.
package schema
