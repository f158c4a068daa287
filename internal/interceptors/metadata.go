package interceptors

import (
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// callMetadata is the metadata a tool sees of a call (ToolContext.metadata,
// flattened as callctx.Facts holds it): the client's name and version (MCP
// clientInfo, which the bridge sends as x-agent-id and x-agent-version,
// else the product of its User-Agent), its User-Agent, the transport and
// the headers allowed, each as "header.<name>".
func callMetadata(md metadata.MD, allowed wire.MetadataHeaders, transport, agentID, agentVersion string) map[string]string {
	out := map[string]string{wire.MetaTransport: transport}
	ua := header(md, wire.HeaderClientUserAgent, 256)
	if ua == "" {
		ua = header(md, "user-agent", 256)
	}
	name, version := agentID, agentVersion
	if ua != "" {
		out[wire.MetaUserAgent] = ua
		if name == "" {
			product, _, _ := strings.Cut(ua, " ")
			name, version, _ = strings.Cut(product, "/")
		}
	}
	if name != "" {
		out[wire.MetaClientName] = name
	}
	if version != "" {
		out[wire.MetaClientVersion] = version
	}
	for _, h := range allowed.Names() {
		if wire.IsCredentialHeader(h) {
			continue
		}
		if v := header(md, h, 256); v != "" {
			out[wire.MetaHeaderPrefix+h] = v
		}
	}
	return out
}
