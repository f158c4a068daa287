// Package version holds the service version, reported in every result's
// metadata (the tool contract's serviceVersion) and in MCP server info.
package version

// Version is the semantic version of toolsvc; release builds override it
// with -ldflags "-X github.com/toolsvc/toolsvc/internal/base/version.Version=…".
var Version = "0.1.0"

// Name is the service name reported to MCP clients.
const Name = "toolsvc"
