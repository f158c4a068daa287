package interceptors

import (
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// callMetadata is the ToolContext.metadata of a call: the client's name
// and version (MCP clientInfo, which the bridge sends as x-agent-id and
// x-agent-version, else the product of its User-Agent), its User-Agent,
// the transport and the headers allowed.
func callMetadata(md metadata.MD, allowed wire.MetadataHeaders, transport, agentID, agentVersion string) *structpb.Struct {
	fields := map[string]*structpb.Value{wire.MetaTransport: structpb.NewStringValue(transport)}
	ua := header(md, wire.HeaderClientUserAgent, 256)
	if ua == "" {
		ua = header(md, "user-agent", 256)
	}
	name, version := agentID, agentVersion
	if ua != "" {
		fields[wire.MetaUserAgent] = structpb.NewStringValue(ua)
		if name == "" {
			product, _, _ := strings.Cut(ua, " ")
			name, version, _ = strings.Cut(product, "/")
		}
	}
	if name != "" {
		fields[wire.MetaClientName] = structpb.NewStringValue(name)
	}
	if version != "" {
		fields[wire.MetaClientVersion] = structpb.NewStringValue(version)
	}
	if names := allowed.Names(); len(names) > 0 {
		hs := map[string]*structpb.Value{}
		for _, h := range names {
			if wire.IsCredentialHeader(h) {
				continue
			}
			if v := header(md, h, 256); v != "" {
				hs[h] = structpb.NewStringValue(v)
			}
		}
		if len(hs) > 0 {
			fields[wire.MetaHeaders] = structpb.NewStructValue(&structpb.Struct{Fields: hs})
		}
	}
	return &structpb.Struct{Fields: fields}
}

// MetadataStrings flattens ToolContext.metadata for callctx.Facts
// (headers as "header.<name>").
func MetadataStrings(s *structpb.Struct) map[string]string {
	out := map[string]string{}
	for k, v := range s.GetFields() {
		if sv := v.GetStructValue(); sv != nil {
			for hk, hv := range sv.GetFields() {
				out["header."+hk] = hv.GetStringValue()
			}
			continue
		}
		out[k] = v.GetStringValue()
	}
	return out
}
