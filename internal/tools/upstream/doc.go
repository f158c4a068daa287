// Package upstream serves the tools of other teams' services ("bring your
// own tools"), listed by an operator in an upstreams file (config.go): gRPC
// services and MCP servers, each about half of the package.
//
//   - gRPC: a service's contracts come from server reflection or a
//     descriptor set; every RPC carrying (toolsvc.v1.tool), or given a
//     definition by an overlay, becomes a tool whose handler forwards the
//     call with dynamic messages (upstream.go, contracts.go, forward.go).
//   - MCP: a server (Streamable HTTP or stdio) is read by tools/list; each
//     tool's contract is derived from its schemas and _meta, completed by
//     the operator's overlays and serving rules (mcpcontract.go,
//     naming.go), and its calls go out as tools/call through toolsvc's MCP
//     client (mcp.go, mcpclient.go, mcprevision.go for revision
//     2026-07-28). What the server asks or sends back during a call is
//     relayed to the caller (mcpask.go, subscribe.go); its resources and
//     prompts are served only as the operator grants (federate.go); its
//     definitions are pinned against silent change (pin.go).
//   - Both: who is calling reaches the upstream as a signed assertion
//     (identity.go, callerauth.go), as the caller's own sealed credential
//     (usercreds.go, credtools.go) or as an exchanged token
//     (tokenexchange.go, exchangeaudit.go); each upstream sits behind a
//     bulkhead and a circuit breaker (bulkhead.go).
//
// Either way the result is a registry.Service: the registry checks those
// tools as it checks in-tree ones and refuses, not serves, any that fail;
// calls reach them by ToolService.CallTool through the one chain.
// Transports and the chain know nothing of upstreams.
package upstream
