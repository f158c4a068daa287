package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// The tools through which a caller stores and deletes its own credential
// for an upstream that needs one. They are tools like any other: the
// chain authenticates the caller, checks credentials:write, rate-limits
// and audits every call (the audit record names the tool, never the
// arguments). Nothing reads a credential back.
const (
	ToolSetCredential    = "set-upstream-credential"
	ToolDeleteCredential = "delete-upstream-credential"
	// PermissionCredentials is the permission both tools need.
	PermissionCredentials = "credentials:write"
	credentialsSource     = "credentials"
)

// WithCredentials seals and opens callers' own credentials for the
// upstreams whose user_credential.required is on, and serves the tools
// that store and delete them. Default none: such an upstream is refused
// at load.
func WithCredentials(c *Credentials) Option {
	return func(s *Set) { s.callers.creds = c }
}

// credentialTools builds the two tools, for the upstreams that need a
// caller's credential (none: no tools).
func (s *Set) credentialTools() error {
	var names []string
	for _, u := range s.ups {
		if u.cfg.UserCredential.Required {
			names = append(names, u.cfg.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	if s.callers.creds == nil {
		return fmt.Errorf("upstream %s: user_credential.required needs --credential-keys (the keys that seal callers' credentials)", names[0])
	}
	slices.Sort(names)
	meta, _ := json.Marshal(map[string]any{"version": "1.0.0", "permissions": []string{PermissionCredentials},
		"tags": []string{"credentials", "upstreams"}, "responseTime": "fast"})
	upstreamProp := map[string]any{"type": "string", "enum": names, "description": "The upstream the credential is for, as the operator named it."}
	descs := []mcpToolDesc{{
		Name: ToolSetCredential,
		Description: "Stores your own credential (a personal access token) for an upstream that needs one, replacing the one stored before. " +
			"It is encrypted at rest, forwarded only to that upstream on your calls, and never shown again, not even to you.",
		InputSchema: mustJSON(map[string]any{"type": "object", "additionalProperties": false, "required": []string{"upstream", "token"},
			"properties": map[string]any{"upstream": upstreamProp,
				"token": map[string]any{"type": "string", "minLength": 1, "maxLength": 4096, "pattern": "^[\\x21-\\x7e]+$", "writeOnly": true,
					"description": "Your credential for the upstream, as it expects it after 'Bearer ' (printable ASCII, no spaces)."}},
			"examples": []any{map[string]any{"upstream": names[0], "token": "example-personal-access-token"}}}),
		OutputSchema: mustJSON(map[string]any{"type": "object", "additionalProperties": false, "required": []string{"upstream", "stored"},
			"properties": map[string]any{"upstream": map[string]any{"type": "string", "description": "The upstream."},
				"stored": map[string]any{"type": "boolean", "description": "Whether the credential is stored."}}}),
	}, {
		Name: ToolDeleteCredential,
		Description: "Deletes your own credential for an upstream, so that toolsvc forwards it no more; " +
			"calls to that upstream are then refused until you store one again. It says whether there was one.",
		InputSchema: mustJSON(map[string]any{"type": "object", "additionalProperties": false, "required": []string{"upstream"},
			"properties": map[string]any{"upstream": upstreamProp},
			"examples":   []any{map[string]any{"upstream": names[0]}}}),
		OutputSchema: mustJSON(map[string]any{"type": "object", "additionalProperties": false, "required": []string{"upstream", "deleted"},
			"properties": map[string]any{"upstream": map[string]any{"type": "string", "description": "The upstream."},
				"deleted": map[string]any{"type": "boolean", "description": "Whether a credential was stored and is now deleted."}}}),
	}}
	var tools []*mcpTool
	for _, d := range descs {
		d.Meta = map[string]json.RawMessage{MetaToolKey: meta}
		no := false
		d.Annotations.ReadOnlyHint, d.Annotations.OpenWorldHint = &no, &no
		t, refused := checkMCPTool(credentialsSource, d, nil, trust{})
		if t == nil {
			return fmt.Errorf("credential tools: %v", refused)
		}
		tools = append(tools, t)
	}
	fd := mcpFile(credentialsSource, tools)
	files, err := register([]*descriptorpb.FileDescriptorProto{fd}, map[string]*descriptorpb.FileDescriptorProto{fd.GetName(): fd}, nil)
	if err != nil {
		return fmt.Errorf("credential tools: %w", err)
	}
	svcName := fd.GetPackage() + ".Tools"
	d, err := files.FindDescriptorByName(protoreflect.FullName(svcName))
	if err != nil {
		return err
	}
	sd := d.(protoreflect.ServiceDescriptor)
	desc := &grpc.ServiceDesc{ServiceName: svcName, HandlerType: (*any)(nil)}
	contracts := map[string]registry.JSONContract{}
	for _, t := range tools {
		t.envelope = sd.Methods().ByName(protoreflect.Name(t.method)).Output()
		desc.Methods = append(desc.Methods, grpc.MethodDesc{MethodName: t.method, Handler: s.credentialHandler(t, "/"+svcName+"/"+t.method)})
		contracts[t.method] = registry.JSONContract{Input: withoutDialect(t.input), Output: withoutDialect(t.output), Check: t.checkInput}
	}
	s.callers.services = []registry.Service{{Desc: desc, Impl: s, Files: files, Source: "toolsvc " + credentialsSource, Contracts: contracts}}
	return nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (s *Set) credentialHandler(t *mcpTool, fullMethod string) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		req := &structpb.Struct{}
		if err := dec(req); err != nil {
			return nil, toolerr.Wrap(err, toolerr.InvalidInput, "the arguments do not decode")
		}
		run := func(ctx context.Context, req any) (any, error) {
			return s.storeCredential(ctx, t, req.(*structpb.Struct))
		}
		if interceptor == nil {
			return run(ctx, req)
		}
		return interceptor(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: fullMethod}, run)
	}
}

func (s *Set) storeCredential(ctx context.Context, t *mcpTool, req *structpb.Struct) (proto.Message, error) {
	f := callctx.From(ctx)
	if f == nil {
		return nil, toolerr.New(toolerr.Internal, "internal error: credential tool called outside the chain")
	}
	if err := t.checkInput(req); err != nil {
		return nil, err
	}
	if f.Subject == "" {
		return nil, toolerr.New(toolerr.Forbidden, "a credential is stored for an authenticated caller; this call has none")
	}
	upstream := req.GetFields()["upstream"].GetStringValue()
	out := map[string]any{"upstream": upstream}
	var err error
	switch t.desc.Name {
	case ToolSetCredential:
		err = s.callers.creds.Put(ctx, f.Tenant, f.Subject, upstream, req.GetFields()["token"].GetStringValue())
		out["stored"] = err == nil
	default:
		var deleted bool
		deleted, err = s.callers.creds.Delete(ctx, f.Tenant, f.Subject, upstream)
		out["deleted"] = deleted
	}
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.ProviderError, "the credential could not be saved; retry").
			WithDetails(map[string]any{"upstream": upstream})
	}
	data, err := structpb.NewStruct(out)
	if err != nil {
		return nil, toolerr.Wrap(err, toolerr.Internal, "internal error")
	}
	env := dynamicpb.NewMessage(t.envelope)
	fields := t.envelope.Fields()
	env.Set(fields.ByName("data"), protoreflect.ValueOfMessage(data.ProtoReflect()))
	h := &toolsvcv1.AgentHints{Confidence: 1, SourceQuality: "high", ValidityPeriod: "long",
		Reasoning:       "toolsvc itself stored or deleted the credential; it forwards it only to " + upstream + " on this caller's calls.",
		ContextNeeded:   []string{},
		EstimatedImpact: &toolsvcv1.EstimatedImpact{Benefit: 0.5, Effort: 0.1, Roi: 5}}
	env.Set(fields.ByName("agent_hints"), protoreflect.ValueOfMessage(h.ProtoReflect()))
	return env.Interface(), nil
}
