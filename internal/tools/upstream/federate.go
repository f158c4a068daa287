package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/prompt"
	"github.com/toolsvc/toolsvc/internal/contract/resource"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Federated is what the operator grants of an MCP server's resources or
// prompts (docs/ADDING-A-TOOL.md, "Resources and prompts"): nothing of
// either is served unless its block is written, and then only to callers
// holding Permission. They are served under Namespace: a resource's URI
// becomes "{namespace}+{uri}" and a prompt's name "{namespace}/{name}".
type Federated struct {
	// Permission is what a caller needs to list and read the resources
	// (get the prompts): {upstream}:{action}, or one allow_permissions
	// lists.
	Permission string `yaml:"permission"`
	// Namespace is the prefix of the served URIs or names; default the
	// upstream's name. No two upstreams share one.
	Namespace string `yaml:"namespace"`
	// Renames gives the served name (after the namespace) of prompts by
	// the name the server lists; prompts only.
	Renames map[string]string `yaml:"renames"`
}

// namespace is Namespace or the upstream's name.
func (f *Federated) namespace(upstream string) string {
	if f == nil || f.Namespace == "" {
		return upstream
	}
	return f.Namespace
}

// promptNameRE is what a served prompt name must be after its namespace.
var promptNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// completeFederated checks the resources and prompts blocks of an entry.
func (u *Config) completeFederated() []error {
	var errs []error
	for _, b := range []struct {
		key string
		f   *Federated
	}{{"resources", u.Resources}, {"prompts", u.Prompts}} {
		if b.f == nil {
			continue
		}
		if u.MCP == nil {
			errs = append(errs, fmt.Errorf("%s: only an MCP server has resources and prompts", b.key))
			continue
		}
		switch p := b.f.Permission; {
		case p == "":
			errs = append(errs, fmt.Errorf("%s.permission: give the permission a caller needs ({upstream}:{action}, e.g. %s:read)", b.key, u.Name))
		case !permissionRE.MatchString(p):
			errs = append(errs, fmt.Errorf("%s.permission: %q is not a permission {resource}:{action}", b.key, p))
		case !strings.HasPrefix(p, u.Name+":") && !slices.Contains(u.AllowPermissions, p):
			errs = append(errs, fmt.Errorf("%s.permission: %q is outside the upstream's namespace %s:…; list it under allow_permissions to grant it", b.key, p, u.Name))
		}
		if b.f.Namespace != "" && !nameRE.MatchString(b.f.Namespace) {
			errs = append(errs, fmt.Errorf("%s.namespace %q: want lower case letters, digits and dashes", b.key, b.f.Namespace))
		}
		if b.key == "resources" && len(b.f.Renames) > 0 {
			errs = append(errs, errors.New("resources.renames: only prompts are renamed; a resource keeps its URI under the namespace"))
		}
		for _, from := range sortedKeys(anyMap(b.f.Renames)) {
			if !promptNameRE.MatchString(b.f.Renames[from]) {
				errs = append(errs, fmt.Errorf("prompts.renames[%s]: %q: want letters, digits, dots, dashes and underscores", from, b.f.Renames[from]))
			}
		}
	}
	return errs
}

// checkNamespaces refuses two upstreams serving resources (or prompts)
// under one namespace: the one collision rule is that every served URI and
// prompt name carries exactly one upstream's namespace.
func checkNamespaces(ups []Config) []error {
	var errs []error
	res, pr := map[string]string{}, map[string]string{}
	for _, u := range ups {
		if u.Resources != nil {
			ns := u.Resources.namespace(u.Name)
			if other, ok := res[ns]; ok {
				errs = append(errs, fmt.Errorf("upstreams file: upstream %s: resources.namespace %q is %s's too; give one of them another", u.Name, ns, other))
			}
			res[ns] = u.Name
		}
		if u.Prompts != nil {
			ns := u.Prompts.namespace(u.Name)
			if other, ok := pr[ns]; ok {
				errs = append(errs, fmt.Errorf("upstreams file: upstream %s: prompts.namespace %q is %s's too; give one of them another", u.Name, ns, other))
			}
			pr[ns] = u.Name
		}
	}
	return errs
}

// Operations of the federated tools.
const (
	opListResources = iota + 1
	opShowResource
	opListPrompts
	opGetPrompt
)

// federatedTools returns the tools through which the upstream's resources
// and prompts are listed, read and got, as the operator granted them:
// list-{ns}-resources, show-{ns}-resource, list-{ns}-prompts and
// get-{ns}-prompt. They are tools like any other (the chain authenticates,
// authorizes with the granted permission, rate limits and audits them),
// and the providers of the upstream's service call them; the transports
// that have resources and prompts (MCP) serve them as such.
func (u *Upstream) federatedTools() ([]*mcpTool, error) {
	var out []*mcpTool
	add := func(op int, name, title, desc, perm, tag string, input, output map[string]any, example string) error {
		in, _ := json.Marshal(input)
		outRaw, _ := json.Marshal(output)
		t := &mcpTool{op: op, method: methodName(name), desc: mcpToolDesc{Name: name, Description: desc}}
		t.listed, t.orig = name, t.desc
		var err error
		if t.input, t.inputCheck, err = compileSchema(in, "input"); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if t.output, t.outputCheck, err = compileSchema(outRaw, "output"); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		t.spec = &toolsvcv1.Tool{
			Name: name, Version: "1.0.0", Title: title, Description: desc, Category: "query", ResponseTime: "medium",
			Tags: []string{"mcp", u.cfg.Name, tag}, ReadOnly: true, Idempotent: true, OpenWorld: true,
			Permissions: []string{perm},
			Examples:    []*toolsvcv1.ExampleSpec{{Description: "A typical call.", ParamsJson: example, ExpectedResultJson: "{}"}},
		}
		out = append(out, t)
		return nil
	}
	obj := func(props map[string]any, required ...string) map[string]any {
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s
	}
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	open := func(desc string) map[string]any { return map[string]any{"type": "object", "description": desc} }
	list := func(desc string, item map[string]any) map[string]any {
		return map[string]any{"type": "array", "description": desc, "items": item}
	}
	name := u.cfg.Name
	if r := u.cfg.Resources; r != nil {
		ns := r.namespace(name)
		entry := obj(map[string]any{"uri": str("The resource's URI as toolsvc serves it: " + ns + "+ and the server's URI."),
			"name": str("The resource's name."), "title": str("Its title."), "description": str("What it holds."),
			"mimeType": str("Its media type."), "size": map[string]any{"type": "number", "description": "Its size in bytes."}})
		entry["additionalProperties"] = true
		tpl := obj(map[string]any{"uriTemplate": str("The RFC 6570 template of the URIs, starting with " + ns + "+."),
			"name": str("The template's name."), "title": str("Its title."), "description": str("What its resources hold."),
			"mimeType": str("Their media type.")})
		tpl["additionalProperties"] = true
		if err := add(opListResources, "list-"+ns+"-resources", "List the resources of "+name,
			"Lists the resources and resource templates of the upstream MCP server "+name+", with URIs under "+ns+"+. Use it to find what show-"+ns+"-resource reads. Returns resources and resourceTemplates.",
			r.Permission, "resources", obj(map[string]any{}),
			obj(map[string]any{"resources": list("The resources.", entry), "resourceTemplates": list("The templates of resources read by URI.", tpl)}, "resources", "resourceTemplates"),
			`{}`); err != nil {
			return nil, err
		}
		content := obj(map[string]any{"uri": str("The URI read, under " + ns + "+."), "mimeType": str("Its media type."),
			"text": str("The content as text."), "blob": str("The content as base64, for binary data.")}, "uri")
		content["additionalProperties"] = true
		uriIn := str("The URI to read, as list-" + ns + "-resources gives it: " + ns + "+ followed by the server's URI.")
		if err := add(opShowResource, "show-"+ns+"-resource", "Read a resource of "+name,
			"Reads one resource of the upstream MCP server "+name+" by its URI under "+ns+"+. Use it after list-"+ns+"-resources. Returns the contents, as text or base64 blob.",
			r.Permission, "resources", obj(map[string]any{"uri": uriIn}, "uri"),
			obj(map[string]any{"contents": list("The resource's contents.", content)}, "contents"),
			`{"uri":"`+ns+`+example://resource"}`); err != nil {
			return nil, err
		}
	}
	if p := u.cfg.Prompts; p != nil {
		ns := p.namespace(name)
		arg := obj(map[string]any{"name": str("The argument's name."), "title": str("Its title."), "description": str("What it is."),
			"required": map[string]any{"type": "boolean", "description": "Whether the prompt needs it."}}, "name")
		entry := obj(map[string]any{"name": str("The prompt's name as toolsvc serves it: " + ns + "/ and its name."),
			"title": str("Its title."), "description": str("What it asks."), "arguments": list("The arguments it takes.", arg)}, "name")
		if err := add(opListPrompts, "list-"+ns+"-prompts", "List the prompts of "+name,
			"Lists the prompts of the upstream MCP server "+name+", named under "+ns+"/, with their arguments. Use it to find what get-"+ns+"-prompt renders. Returns the prompts.",
			p.Permission, "prompts", obj(map[string]any{}),
			obj(map[string]any{"prompts": list("The prompts.", entry)}, "prompts"), `{}`); err != nil {
			return nil, err
		}
		argIn := obj(map[string]any{"name": str("The argument's name, one the prompt lists."), "value": str("Its value.")}, "name", "value")
		nameIn := str("The prompt's name as list-" + ns + "-prompts gives it: " + ns + "/ and its name.")
		msg := obj(map[string]any{"role": str("user or assistant."), "content": open("The message's content block (text, image, audio, resource or resource_link).")}, "role", "content")
		if err := add(opGetPrompt, "get-"+ns+"-prompt", "Get a prompt of "+name,
			"Renders one prompt of the upstream MCP server "+name+" by its name under "+ns+"/ with its arguments. Use it after list-"+ns+"-prompts. Returns the prompt's messages.",
			p.Permission, "prompts", obj(map[string]any{"name": nameIn, "arguments": list("The prompt's arguments, each by name.", argIn)}, "name"),
			obj(map[string]any{"description": str("What the prompt is."), "messages": list("The rendered messages.", msg)}, "messages"),
			`{"name":"`+ns+`/example","arguments":[{"name":"topic","value":"release notes"}]}`); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// callFederated runs one of the federated tools: the upstream's
// resources/… or prompts/… method, its names mapped both ways.
func (u *Upstream) callFederated(ctx context.Context, t *mcpTool, req proto.Message) (proto.Message, error) {
	facts := callctx.From(ctx)
	if facts == nil {
		return nil, toolerr.New(toolerr.Internal, "internal error: upstream tool called outside the chain")
	}
	md, err := u.outgoing(ctx, facts)
	if err != nil {
		return nil, err
	}
	hdr := principalHeaders(md)
	if u.cfg.UserCredential.Required || u.cfg.TokenExchange != nil {
		hdr.Set("Authorization", md.Get("authorization")[0])
	}
	meta := map[string]any{}
	for k, vs := range md {
		if k == "authorization" || len(vs) == 0 {
			continue
		}
		switch k {
		case MDTraceparent:
			meta["traceparent"] = vs[0]
		case MDCorrelation:
			meta["toolsvc/correlation-id"] = vs[0]
		default:
			meta["toolsvc/"+strings.TrimPrefix(k, MDIDPrefix)] = vs[0]
		}
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	call := func(method string, params map[string]any) (json.RawMessage, error) {
		params["_meta"] = meta
		res, err := u.mcp.call(ctx, method, params, hdr)
		if err != nil {
			return nil, u.mapMCPError(ctx, err)
		}
		return res, nil
	}
	args := req.(*structpb.Struct).AsMap()
	var data map[string]any
	switch t.op {
	case opListResources:
		data, err = u.listResources(call)
	case opShowResource:
		data, err = u.readResource(call, args)
	case opListPrompts:
		var ps []prompt.Prompt
		if ps, _, err = u.listPrompts(call); err == nil {
			data = map[string]any{"prompts": ps}
		}
	case opGetPrompt:
		data, err = u.getPrompt(call, args)
	}
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(data)
	if err != nil {
		return nil, u.malformed(err, "the answer does not encode")
	}
	st := &structpb.Struct{}
	if err := protojson.Unmarshal(b, st); err != nil {
		return nil, u.malformed(err, "the answer is not a JSON object")
	}
	env := dynamicpb.NewMessage(t.envelope)
	fields := t.envelope.Fields()
	env.Set(fields.ByName("data"), protoreflect.ValueOfMessage(st.ProtoReflect()))
	env.Set(fields.ByName("agent_hints"), protoreflect.ValueOfMessage(noHints(u.cfg.Name).ProtoReflect()))
	return env.Interface(), nil
}

type upstreamCall func(method string, params map[string]any) (json.RawMessage, error)

// listPages reads every page of a list method into items (the value of
// key), up to maxListPages.
func (u *Upstream) listPages(call upstreamCall, method, key string) ([]map[string]any, error) {
	var all []map[string]any
	cursor := ""
	for page := 0; ; page++ {
		if page == maxListPages {
			return nil, u.malformed(errors.New("too many pages"), "%s: more than %d pages", method, maxListPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := call(method, params)
		if err != nil {
			return nil, err
		}
		var out map[string]json.RawMessage
		var items []map[string]any
		var next string
		if json.Unmarshal(res, &out) != nil || json.Unmarshal(cmpRaw(out[key], "[]"), &items) != nil ||
			json.Unmarshal(cmpRaw(out["nextCursor"], `""`), &next) != nil {
			return nil, u.malformed(errors.New("bad "+method+" result"), "the %s result does not decode", method)
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

func cmpRaw(r json.RawMessage, def string) json.RawMessage {
	if len(r) == 0 || string(r) == "null" {
		return json.RawMessage(def)
	}
	return r
}

// listResources lists the upstream's resources and templates, their URIs
// under the namespace. A server without templates lists none.
func (u *Upstream) listResources(call upstreamCall) (map[string]any, error) {
	scheme := u.cfg.Resources.namespace(u.cfg.Name) + "+"
	rs, err := u.listPages(call, "resources/list", "resources")
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		uri, _ := r["uri"].(string)
		if uri == "" {
			return nil, u.malformed(errors.New("no uri"), "a resource of resources/list has no uri")
		}
		r["uri"] = scheme + uri
		delete(r, "_meta")
		delete(r, "annotations")
		delete(r, "icons")
	}
	ts, err := u.listPages(call, "resources/templates/list", "resourceTemplates")
	var te *toolerr.Error
	if err != nil && errors.As(err, &te) && te.Code == toolerr.ProviderError && te.Final {
		ts, err = nil, nil // the server has no templates (method not found)
	}
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		tpl, _ := t["uriTemplate"].(string)
		t["uriTemplate"] = scheme + tpl
		delete(t, "_meta")
		delete(t, "annotations")
		delete(t, "icons")
	}
	return map[string]any{"resources": orEmpty(rs), "resourceTemplates": orEmpty(ts)}, nil
}

func orEmpty(xs []map[string]any) []map[string]any {
	if xs == nil {
		return []map[string]any{}
	}
	return xs
}

// readResource reads one resource by its served URI.
func (u *Upstream) readResource(call upstreamCall, args map[string]any) (map[string]any, error) {
	scheme := u.cfg.Resources.namespace(u.cfg.Name) + "+"
	served, _ := args["uri"].(string)
	uri, ok := strings.CutPrefix(served, scheme)
	if !ok || uri == "" {
		return nil, toolerr.Invalid("uri", "uri.namespace", "the URI %q is not one of upstream %s's resources: they are %s{uri}", served, u.cfg.Name, scheme)
	}
	res, err := call("resources/read", map[string]any{"uri": uri})
	if err != nil {
		return nil, err
	}
	var out struct {
		Contents []map[string]any `json:"contents"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, u.malformed(err, "the resources/read result does not decode")
	}
	for _, c := range out.Contents {
		got, _ := c["uri"].(string)
		c["uri"] = scheme + got
		delete(c, "_meta")
	}
	if out.Contents == nil {
		out.Contents = []map[string]any{}
	}
	return map[string]any{"contents": out.Contents}, nil
}

// servedPrompt maps a prompt name the server lists to the name served
// after the namespace: its rename, else the name (in kebab case when the
// upstream's naming asks for it); "" when it is not a name toolsvc serves.
func (u *Upstream) servedPrompt(listed string) string {
	name := listed
	if to, ok := u.cfg.Prompts.Renames[listed]; ok {
		name = to
	} else if u.cfg.Naming.KebabCase {
		name = strings.ReplaceAll(name, "_", "-")
	}
	if !promptNameRE.MatchString(name) || strings.IndexFunc(name, unicode.IsSpace) >= 0 {
		return ""
	}
	return name
}

// listPrompts lists the upstream's prompts under their served names and
// maps each served name to the listed one. Two prompts that would be
// served under one name are both left out (the collision rule of tools),
// and so is a prompt whose name cannot be served.
func (u *Upstream) listPrompts(call upstreamCall) ([]prompt.Prompt, map[string]string, error) {
	ns := u.cfg.Prompts.namespace(u.cfg.Name) + "/"
	items, err := u.listPages(call, "prompts/list", "prompts")
	if err != nil {
		return nil, nil, err
	}
	b, _ := json.Marshal(items)
	var ps []prompt.Prompt
	if err := json.Unmarshal(b, &ps); err != nil {
		return nil, nil, u.malformed(err, "the prompts/list result does not decode")
	}
	count := map[string]int{}
	for i := range ps {
		count[u.servedPrompt(ps[i].Name)]++
	}
	out, listed := []prompt.Prompt{}, map[string]string{}
	for _, p := range ps {
		served := u.servedPrompt(p.Name)
		if served == "" || count[served] > 1 {
			continue
		}
		listed[ns+served] = p.Name
		p.Name = ns + served
		out = append(out, p)
	}
	return out, listed, nil
}

// getPrompt renders a prompt by its served name, its arguments checked
// against the prompt's listing first: an unknown prompt, a missing
// required argument and an unknown one are refused naming the field.
func (u *Upstream) getPrompt(call upstreamCall, args map[string]any) (map[string]any, error) {
	ps, listed, err := u.listPrompts(call)
	if err != nil {
		return nil, err
	}
	served, _ := args["name"].(string)
	i := slices.IndexFunc(ps, func(p prompt.Prompt) bool { return p.Name == served })
	if i < 0 {
		names := make([]string, 0, len(ps))
		for _, p := range ps {
			names = append(names, p.Name)
		}
		return nil, toolerr.Invalid("name", "prompt.exists", "upstream %s serves no prompt %q (it serves %s)", u.cfg.Name, served, strings.Join(names, ", "))
	}
	p := ps[i]
	given := map[string]string{}
	list, _ := args["arguments"].([]any)
	for j, a := range list {
		m, _ := a.(map[string]any)
		n, _ := m["name"].(string)
		v, _ := m["value"].(string)
		if _, dup := given[n]; dup {
			return nil, toolerr.Invalid(fmt.Sprintf("arguments[%d].name", j), "prompt.argument_unique", "argument %q is given twice", n)
		}
		if !slices.ContainsFunc(p.Arguments, func(x prompt.Argument) bool { return x.Name == n }) {
			return nil, toolerr.Invalid(fmt.Sprintf("arguments[%d].name", j), "prompt.argument_known", "prompt %s takes no argument %q (it takes %s)", served, n, argNames(p.Arguments))
		}
		given[n] = v
	}
	for _, x := range p.Arguments {
		if _, ok := given[x.Name]; x.Required && !ok {
			return nil, toolerr.Invalid("arguments."+x.Name, "prompt.argument_required", "prompt %s needs argument %q", served, x.Name)
		}
	}
	res, err := call("prompts/get", map[string]any{"name": listed[served], "arguments": given})
	if err != nil {
		return nil, err
	}
	var out struct {
		Description string           `json:"description"`
		Messages    []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, u.malformed(err, "the prompts/get result does not decode")
	}
	if u.cfg.Resources != nil { // embedded resources are served under the namespace
		scheme := u.cfg.Resources.namespace(u.cfg.Name) + "+"
		for _, m := range out.Messages {
			c, _ := m["content"].(map[string]any)
			if r, ok := c["resource"].(map[string]any); ok {
				if uri, ok := r["uri"].(string); ok {
					r["uri"] = scheme + uri
				}
			}
			if uri, ok := c["uri"].(string); ok && c["type"] == "resource_link" {
				c["uri"] = scheme + uri
			}
		}
	}
	data := map[string]any{"messages": out.Messages}
	if out.Messages == nil {
		data["messages"] = []any{}
	}
	if out.Description != "" {
		data["description"] = out.Description
	}
	return data, nil
}

func argNames(as []prompt.Argument) string {
	if len(as) == 0 {
		return "none"
	}
	names := make([]string, 0, len(as))
	for _, a := range as {
		names = append(names, a.Name)
	}
	return strings.Join(names, ", ")
}

// federatedResources is the resource.Provider of an upstream's resources:
// it lists and reads through list-{ns}-resources and show-{ns}-resource on
// the chain, as the caller.
type federatedResources struct {
	u                      *Upstream
	upstream, ns           string
	listMethod, readMethod string
	listOut, readOut       protoreflect.MessageDescriptor
}

func (r *federatedResources) Scheme() string { return r.ns + "+" }

func (r *federatedResources) Template() resource.Template {
	return resource.Template{URITemplate: r.ns + "+{uri}", Name: r.ns + "-resources", Title: "Resources of upstream " + r.upstream,
		Description: "A resource of the upstream MCP server " + r.upstream + ": " + r.ns + "+ followed by the URI the server gives it."}
}

func (r *federatedResources) Instructions() string { return "" }

// callData runs a federated tool on the chain and decodes its data into v.
func callData(ctx context.Context, call resource.Call, method string, out protoreflect.MessageDescriptor, in map[string]any, v any) error {
	req, err := structpb.NewStruct(in)
	if err != nil {
		return toolerr.Wrap(err, toolerr.InvalidInput, "the arguments do not encode")
	}
	env := dynamicpb.NewMessage(out)
	if err := call(ctx, method, req, env); err != nil {
		return err
	}
	data := env.Get(out.Fields().ByName("data")).Message().Interface()
	b, err := protojson.Marshal(data)
	if err != nil {
		return toolerr.Wrap(err, toolerr.Internal, "the result does not encode")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return toolerr.Wrap(err, toolerr.Internal, "the result does not decode")
	}
	return nil
}

type resourceListing struct {
	Resources []resource.Resource `json:"resources"`
	Templates []resource.Template `json:"resourceTemplates"`
}

func (r *federatedResources) List(ctx context.Context, call resource.Call) ([]resource.Resource, error) {
	var l resourceListing
	err := callData(ctx, call, r.listMethod, r.listOut, map[string]any{}, &l)
	return l.Resources, err
}

// Templates implements resource.TemplateLister.
func (r *federatedResources) Templates(ctx context.Context, call resource.Call) ([]resource.Template, error) {
	var l resourceListing
	err := callData(ctx, call, r.listMethod, r.listOut, map[string]any{}, &l)
	return l.Templates, err
}

func (r *federatedResources) Read(ctx context.Context, call resource.Call, uri string) ([]resource.Content, error) {
	var out struct {
		Contents []resource.Content `json:"contents"`
	}
	err := callData(ctx, call, r.readMethod, r.readOut, map[string]any{"uri": uri}, &out)
	return out.Contents, err
}

func (r *federatedResources) Complete(context.Context, resource.Call, string, string) []string {
	return []string{}
}

// federatedPrompts is the prompt.Provider of an upstream's prompts: it
// lists and gets through list-{ns}-prompts and get-{ns}-prompt on the
// chain, as the caller.
type federatedPrompts struct {
	ns                    string
	listMethod, getMethod string
	listOut, getOut       protoreflect.MessageDescriptor
}

func (p *federatedPrompts) Prefix() string { return p.ns + "/" }

func (p *federatedPrompts) List(ctx context.Context, call resource.Call) ([]prompt.Prompt, error) {
	var out struct {
		Prompts []prompt.Prompt `json:"prompts"`
	}
	err := callData(ctx, call, p.listMethod, p.listOut, map[string]any{}, &out)
	return out.Prompts, err
}

func (p *federatedPrompts) Get(ctx context.Context, call resource.Call, name string, args map[string]string) (prompt.Result, error) {
	list := make([]any, 0, len(args))
	for _, k := range sortedKeys(anyMap(args)) {
		list = append(list, map[string]any{"name": k, "value": args[k]})
	}
	var out prompt.Result
	err := callData(ctx, call, p.getMethod, p.getOut, map[string]any{"name": name, "arguments": list}, &out)
	return out, err
}

// withFederated adds the federated tools to the server's, refusing a
// listed tool served under one of their names (mcp.name): the names
// toolsvc gives the resources and prompts the operator granted win.
func (u *Upstream) withFederated(tools, fed []*mcpTool) []*mcpTool {
	tools = slices.DeleteFunc(tools, func(t *mcpTool) bool {
		if slices.ContainsFunc(fed, func(f *mcpTool) bool { return f.desc.Name == t.desc.Name }) {
			u.refused = append(u.refused, RefusedTool{Tool: t.listed, Rule: RuleMCPName,
				Message: fmt.Sprintf("served name %q is the one toolsvc gives the upstream's resources or prompts; rename the tool (naming.renames)", t.desc.Name)})
			return true
		}
		return false
	})
	return append(tools, fed...)
}

// federatedProviders returns the providers of the federated tools, whose
// methods are prefix (/{service}/) and their method names; nil when the
// operator granted neither.
func (u *Upstream) federatedProviders(prefix string, fed []*mcpTool) (resource.Provider, prompt.Provider) {
	var (
		res *federatedResources
		pr  *federatedPrompts
	)
	for _, t := range fed {
		switch t.op {
		case opListResources:
			res = &federatedResources{u: u, upstream: u.cfg.Name, ns: u.cfg.Resources.namespace(u.cfg.Name), listMethod: prefix + t.method, listOut: t.envelope}
		case opShowResource:
			res.readMethod, res.readOut = prefix+t.method, t.envelope
		case opListPrompts:
			pr = &federatedPrompts{ns: u.cfg.Prompts.namespace(u.cfg.Name), listMethod: prefix + t.method, listOut: t.envelope}
		case opGetPrompt:
			pr.getMethod, pr.getOut = prefix+t.method, t.envelope
		}
	}
	var (
		rp resource.Provider
		pp prompt.Provider
	)
	if res != nil {
		rp = res
	}
	if pr != nil {
		pp = pr
	}
	return rp, pp
}

// contentData is the data of a result served with content_as_data: its
// content blocks, under "content".
func contentData(content json.RawMessage) json.RawMessage {
	if len(content) == 0 || string(content) == "null" {
		content = json.RawMessage("[]")
	}
	return append(append(json.RawMessage(`{"content":`), content...), '}')
}

// WithOnListChanged calls f with notifications/resources/list_changed or
// notifications/prompts/list_changed when an MCP server says so of the
// resources or prompts the operator granted: the transports tell their
// clients, whose next listing reads the server again through the chain.
func WithOnListChanged(f func(method string)) Option {
	return func(s *Set) { s.onListChanged = f }
}

// federatedChanged relays a list change of the granted resources or
// prompts to the set's owner.
func (u *Upstream) federatedChanged(method string) {
	if u.set == nil || u.set.onListChanged == nil {
		return
	}
	switch {
	case method == "notifications/resources/list_changed" && u.cfg.Resources != nil,
		method == "notifications/prompts/list_changed" && u.cfg.Prompts != nil:
		u.set.onListChanged(method)
	}
}
