package upstream

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

func TestParseMCPEntries(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"url and command", "upstreams:\n  - {name: a, mcp: {url: 'http://127.0.0.1:1/mcp', command: [x]}}\n", "not both"},
		{"neither", "upstreams:\n  - {name: a, mcp: {}}\n", "not both"},
		{"address too", "upstreams:\n  - {name: a, address: 127.0.0.1:1, mcp: {url: 'http://127.0.0.1:1/mcp'}}\n", "address"},
		{"http beyond loopback", "upstreams:\n  - {name: a, mcp: {url: 'http://10.0.0.5/mcp'}}\n", "not a loopback address"},
		{"credential in the URL", "upstreams:\n  - {name: a, mcp: {url: 'https://u:p@h.example/mcp'}}\n", "not in the URL"},
		{"not http", "upstreams:\n  - {name: a, mcp: {url: 'file:///etc/passwd'}}\n", "want an http or https URL"},
		{"contracts", "upstreams:\n  - {name: a, mcp: {url: 'http://127.0.0.1:1/mcp'}, contracts: {reflection: true}}\n", "remove contracts"},
		{"https with plaintext", "upstreams:\n  - {name: a, mcp: {url: 'https://h.example/mcp'}, tls: {mode: plaintext}}\n", "contradicts"},
		{"unknown protocol", "upstreams:\n  - {name: a, mcp: {url: 'http://127.0.0.1:1/mcp', protocol: '2024-11-05'}}\n", `mcp.protocol "2024-11-05": want auto, 2026-07-28 or 2025-11-25`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.body), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	f, err := Parse([]byte("upstreams:\n  - {name: a, mcp: {url: 'http://localhost:9/mcp'}, overlays: {list-things: {version: 2.0.0}}}\n  - {name: b, mcp: {command: [bin/server, -stdio], protocol: 2025-11-25}}\n  - {name: c, mcp: {url: 'https://mcp.example/mcp'}, tls: {mode: system}}\n"), "/etc/toolsvc")
	if err != nil {
		t.Fatal(err)
	}
	if f.Upstreams[0].TLS.Mode != "plaintext" || f.Upstreams[0].overlays["list-things"].GetVersion() != "2.0.0" {
		t.Fatalf("http entry = %+v", f.Upstreams[0])
	}
	if f.Upstreams[0].MCP.Protocol != ProtocolAuto || f.Upstreams[1].MCP.Protocol != Revision2025 {
		t.Fatalf("mcp.protocol = %q, %q: want the default auto, then the file's", f.Upstreams[0].MCP.Protocol, f.Upstreams[1].MCP.Protocol)
	}
	if got := f.Upstreams[1].MCP.Command[0]; got != "/etc/toolsvc/bin/server" {
		t.Fatalf("relative command = %s, want it under the file's directory", got)
	}
}

func TestStdioEnvKeepsToolsvcSecrets(t *testing.T) {
	t.Setenv("TOOLSVC_DB_PASSWORD", "secret")
	t.Setenv("UPSTREAM_REGION", "eu")
	env := strings.Join(stdioEnv(Config{MCP: &MCPServer{Env: []string{"UPSTREAM_REGION"}}, token: "t0k"}), "\n")
	if strings.Contains(env, "secret") || !strings.Contains(env, "UPSTREAM_REGION=eu") || !strings.Contains(env, "TOOLSVC_UPSTREAM_TOKEN=t0k") {
		t.Fatalf("child environment:\n%s", env)
	}
	if os.Getenv("PATH") != "" && !strings.Contains(env, "PATH=") {
		t.Fatal("the child gets no PATH")
	}
}

func tool(t *testing.T, js string) mcpToolDesc {
	t.Helper()
	var d mcpToolDesc
	if err := json.Unmarshal([]byte(js), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

const (
	goodIn  = `{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string","minLength":3,"description":"The thing's id."}},"examples":[{"id":"abc"}]}`
	goodOut = `{"type":"object","additionalProperties":false,"properties":{"id":{"type":"string"}}}`
	desc    = "Reads one thing by its id. Use it to look a thing up; it returns the thing."
)

func TestCheckMCPTool(t *testing.T) {
	cases := []struct {
		name, js, rule string
	}{
		{"no output schema", `{"name":"get-thing","description":"` + desc + `","inputSchema":` + goodIn + `}`, RuleMCPOutputSchema},
		{"no input schema", `{"name":"get-thing","description":"` + desc + `","outputSchema":` + goodOut + `}`, RuleMCPInputSchema},
		{"not kebab", `{"name":"GetThing","description":"` + desc + `","inputSchema":` + goodIn + `,"outputSchema":` + goodOut + `}`, RuleMCPName},
		{"no description", `{"name":"get-thing","inputSchema":` + goodIn + `,"outputSchema":` + goodOut + `}`, RuleMCPDescription},
		{"free-form top level", `{"name":"get-thing","description":"` + desc + `","inputSchema":{"type":"object","properties":{"id":{"type":"string"}}},"outputSchema":` + goodOut + `}`, RuleMCPFreeForm},
		{"free-form nested", `{"name":"get-thing","description":"` + desc + `","inputSchema":{"type":"object","additionalProperties":false,"properties":{"opts":{"type":"object"}}},"outputSchema":` + goodOut + `}`, RuleMCPFreeForm},
		{"pattern properties", `{"name":"get-thing","description":"` + desc + `","inputSchema":{"type":"object","additionalProperties":false,"patternProperties":{"^x":{}}},"outputSchema":` + goodOut + `}`, RuleMCPFreeForm},
		{"input not an object", `{"name":"get-thing","description":"` + desc + `","inputSchema":{"type":"string"},"outputSchema":` + goodOut + `}`, RuleMCPInputSchema},
		{"remote ref", `{"name":"get-thing","description":"` + desc + `","inputSchema":{"type":"object","additionalProperties":false,"properties":{"id":{"$ref":"file:///etc/passwd"}}},"outputSchema":` + goodOut + `}`, RuleMCPInputSchema},
		{"undocumented parameter", `{"name":"get-thing","description":"` + desc + `","inputSchema":{"type":"object","additionalProperties":false,"properties":{"id":{"type":"string"}}},"outputSchema":` + goodOut + `}`, RuleMCPParameterDescription},
		{"undocumented nested parameter", `{"name":"get-thing","description":"` + desc + `","inputSchema":{"type":"object","additionalProperties":false,"properties":{"opts":{"type":"object","description":"Options.","additionalProperties":false,"properties":{"deep":{"type":"boolean"}}}}},"outputSchema":` + goodOut + `}`, RuleMCPParameterDescription},
		{"output without properties", `{"name":"get-thing","description":"` + desc + `","inputSchema":` + goodIn + `,"outputSchema":{"type":"object"}}`, RuleMCPOutputSchema},
		{"bad meta", `{"name":"get-thing","description":"` + desc + `","inputSchema":` + goodIn + `,"outputSchema":` + goodOut + `,"_meta":{"toolsvc/tool":{"nope":1}}}`, RuleMCPDefinition},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, r := checkMCPTool("things", tool(t, c.js), nil, trust{})
			if got != nil || !hasRule(r, c.rule) {
				t.Fatalf("refusal = %+v, want rule %s", r, c.rule)
			}
		})
	}
}

func TestMCPToolDefinition(t *testing.T) {
	js := `{"name":"get-thing","description":"` + desc + `","inputSchema":` + goodIn + `,"outputSchema":` + goodOut +
		`,"annotations":{"readOnlyHint":true},"_meta":{"toolsvc/tool":{"tags":["things"],"responseTime":"fast"}}}`
	got, r := checkMCPTool("things", tool(t, js), &toolsvcv1.Tool{Version: "1.2.0"}, trust{claims: []string{ClaimReadOnly}})
	if got == nil {
		t.Fatalf("refused: %+v", r)
	}
	s := got.spec
	if s.GetCategory() != "query" || !s.GetIdempotent() || s.GetSideEffect() || s.GetPermissions()[0] != "things:read" ||
		s.GetTags()[0] != "things" || len(s.GetTags()) != 1 || s.GetResponseTime() != "fast" || s.GetVersion() != "1.2.0" ||
		len(s.GetExamples()) != 1 || s.GetExamples()[0].GetParamsJson() != `{"id":"abc"}` || s.GetOpenWorld() != true {
		t.Fatalf("definition = %v", s)
	}
	// A tool that says nothing of itself is a destructive mutation.
	got, _ = checkMCPTool("things", tool(t, `{"name":"set-thing","description":"`+desc+`","inputSchema":`+goodIn+`,"outputSchema":`+goodOut+`}`), nil, trust{})
	if s := got.spec; s.GetCategory() != "mutation" || !s.GetSideEffect() || !s.GetDestructive() || s.GetPermissions()[0] != "things:write" {
		t.Fatalf("definition without annotations = %v", s)
	}

	args, _ := structpb.NewStruct(map[string]any{"id": "ab", "extra": true})
	err := got.checkInput(args)
	te, ok := toolerr.As(err)
	if !ok || te.Code != toolerr.InvalidInput || len(te.Violations) != 2 {
		t.Fatalf("checkInput = %v", err)
	}
	fields := te.Violations[0].GetField() + " " + te.Violations[1].GetField()
	if !strings.Contains(fields, "id") || !strings.Contains(fields, "(request)") {
		t.Fatalf("violations name %s", fields)
	}
	ok2, _ := structpb.NewStruct(map[string]any{"id": "abc"})
	if err := got.checkInput(ok2); err != nil {
		t.Fatal(err)
	}
}

func TestJSONPath(t *testing.T) {
	for ptr, want := range map[string]string{"": "(request)", "/id": "id", "/files/2/path": "files[2].path", "/a~1b": "a/b"} {
		if got := jsonPath(ptr); got != want {
			t.Errorf("jsonPath(%q) = %q, want %q", ptr, got, want)
		}
	}
}

// TestMCPToolTrust: an upstream's own definition cannot grant itself more
// than the operator gave it. A permission outside {upstream}:… is refused
// with the rule named unless allow_permissions lists it or an overlay
// replaces the permissions; read-only, idempotent and cacheable claims
// take effect only when allow_claims lists them.
func TestMCPToolTrust(t *testing.T) {
	def := func(meta, annotations string) mcpToolDesc {
		return tool(t, `{"name":"get-thing","description":"`+desc+`","inputSchema":`+goodIn+`,"outputSchema":`+goodOut+
			`,"annotations":`+annotations+`,"_meta":{"toolsvc/tool":`+meta+`}}`)
	}
	readOnly := `{"readOnlyHint":true,"idempotentHint":true}`
	mutation := `{"readOnlyHint":false,"idempotentHint":true,"destructiveHint":false}`
	tests := []struct {
		name    string
		d       mcpToolDesc
		overlay *toolsvcv1.Tool
		trust   trust
		rule    string // the refusal, or "" for served
		check   func(*toolsvcv1.Tool) bool
	}{
		{name: "foreign permission refused", d: def(`{"permissions":["memory:read"]}`, readOnly), rule: RuleMCPPermissionNamespace},
		{name: "wildcard refused", d: def(`{"permissions":["things:read","*"]}`, readOnly), rule: RuleMCPPermissionNamespace},
		{name: "another upstream's namespace refused", d: def(`{"permissions":["thingsx:read"]}`, readOnly), rule: RuleMCPPermissionNamespace},
		{name: "own namespace served", d: def(`{"permissions":["things:admin"]}`, readOnly),
			check: func(s *toolsvcv1.Tool) bool { return s.GetPermissions()[0] == "things:admin" }},
		{name: "allowed foreign permission", d: def(`{"permissions":["memory:read"]}`, readOnly), trust: trust{permissions: []string{"memory:read"}},
			check: func(s *toolsvcv1.Tool) bool { return s.GetPermissions()[0] == "memory:read" }},
		{name: "overlay replaces the permission", d: def(`{"permissions":["memory:read"]}`, readOnly), overlay: &toolsvcv1.Tool{Permissions: []string{"ops:read"}},
			check: func(s *toolsvcv1.Tool) bool { return s.GetPermissions()[0] == "ops:read" }},
		{name: "read-only claim ignored", d: def(`{}`, readOnly),
			check: func(s *toolsvcv1.Tool) bool {
				return s.GetCategory() == "mutation" && s.GetSideEffect() && !s.GetReadOnly() && !s.GetIdempotent()
			}},
		{name: "read-only claim allowed", d: def(`{}`, readOnly), trust: trust{claims: []string{ClaimReadOnly}},
			check: func(s *toolsvcv1.Tool) bool {
				return s.GetCategory() == "query" && !s.GetSideEffect() && s.GetReadOnly() && s.GetIdempotent()
			}},
		{name: "meta cannot make a query either", d: def(`{"category":"query","idempotent":true,"sideEffect":false,"readOnly":true}`, `{}`),
			check: func(s *toolsvcv1.Tool) bool {
				return s.GetCategory() == "mutation" && s.GetSideEffect() && !s.GetIdempotent()
			}},
		{name: "idempotent claim ignored", d: def(`{}`, mutation),
			check: func(s *toolsvcv1.Tool) bool { return !s.GetIdempotent() }},
		{name: "idempotent claim allowed", d: def(`{}`, mutation), trust: trust{claims: []string{ClaimIdempotent}},
			check: func(s *toolsvcv1.Tool) bool { return s.GetIdempotent() }},
		{name: "cacheable claim ignored", d: def(`{"cacheable":true,"cacheTtl":60}`, readOnly), trust: trust{claims: []string{ClaimReadOnly}},
			check: func(s *toolsvcv1.Tool) bool { return !s.GetCacheable() && s.GetCacheTtl() == 0 }},
		{name: "cacheable claim allowed", d: def(`{"cacheable":true,"cacheTtl":60}`, readOnly), trust: trust{claims: []string{ClaimReadOnly, ClaimCacheable}},
			check: func(s *toolsvcv1.Tool) bool { return s.GetCacheable() && s.GetCacheTtl() == 60 }},
		{name: "the operator's overlay always stands", d: def(`{}`, readOnly),
			overlay: &toolsvcv1.Tool{Category: "query", ReadOnly: true, Idempotent: true, SideEffect: false, Cacheable: true, CacheTtl: 30},
			check: func(s *toolsvcv1.Tool) bool {
				return s.GetCategory() == "query" && s.GetCacheable() && s.GetIdempotent()
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, r := checkMCPTool("things", tt.d, tt.overlay, tt.trust)
			if tt.rule != "" {
				if got != nil || !hasRule(r, tt.rule) {
					t.Fatalf("refusal = %+v, want rule %s", r, tt.rule)
				}
				return
			}
			if got == nil {
				t.Fatalf("refused: %+v", r)
			}
			if !tt.check(got.spec) {
				t.Fatalf("definition = %v", got.spec)
			}
		})
	}
}

func hasRule(rs []RefusedTool, rule string) bool {
	for _, r := range rs {
		if r.Rule == rule {
			return true
		}
	}
	return false
}

// TestMCPToolEveryProblemAtOnce: a tool that breaks several rules is
// refused with every one of them, so an operator fixes it in one round
// (five lint runs for one tool).
func TestMCPToolEveryProblemAtOnce(t *testing.T) {
	js := `{"name":"count-widgets","inputSchema":{"type":"object","properties":{"id":{"type":"string"}}}}`
	got, rs := checkMCPTool("things", tool(t, js), nil, trust{})
	if got != nil {
		t.Fatal("served")
	}
	var rules []string
	for _, r := range rs {
		rules = append(rules, r.Rule)
	}
	want := []string{registry.RuleNameVerb, RuleMCPDescription, RuleMCPFreeForm, RuleMCPParameterDescription, RuleMCPOutputSchema}
	if !slices.Equal(rules, want) {
		t.Errorf("rules %v, want %v", rules, want)
	}
}

// TestMCPResultHints: an MCP upstream's hints in the result's
// _meta["toolsvc/agentHints"] are taken when they keep their rules; none
// means the "gave no hints" hints; broken or undecodable ones are a
// malformed response, never passed on.
func TestMCPResultHints(t *testing.T) {
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	u := &Upstream{cfg: Config{Name: "things"}, validator: v}
	good := `{"confidence":0.8,"sourceQuality":"high","validityPeriod":"short","reasoning":"counted",
		"estimatedImpact":{"benefit":0.5,"effort":0.5,"roi":1},"suggestedNextActions":[{"action":"get-thing","priority":"low"}]}`
	h, err := u.mcpHints(json.RawMessage(good))
	if err != nil || h.GetConfidence() != 0.8 || h.GetSuggestedNextActions()[0].GetAction() != "get-thing" {
		t.Fatalf("good hints: %v %v", h, err)
	}
	if h, err := u.mcpHints(nil); err != nil || h.GetSourceQuality() != "unknown" || h.GetConfidence() != 0 {
		t.Fatalf("no hints: %v %v", h, err)
	}
	for name, raw := range map[string]string{
		"confidence above 1":  `{"confidence":1.5,"sourceQuality":"high","validityPeriod":"short","estimatedImpact":{"benefit":0.5,"effort":0.5,"roi":1}}`,
		"no estimated impact": `{"confidence":0.5,"sourceQuality":"high","validityPeriod":"short"}`,
		"not an object":       `[1]`,
		"action not a name":   `{"confidence":0.5,"sourceQuality":"high","validityPeriod":"short","estimatedImpact":{"benefit":0.5,"effort":0.5,"roi":1},"suggestedNextActions":[{"action":"Rm -rf","priority":"low"}]}`,
	} {
		_, err := u.mcpHints(json.RawMessage(raw))
		if te, ok := toolerr.As(err); !ok || te.Code != toolerr.ProviderError {
			t.Errorf("%s: %v, want PROVIDER_ERROR", name, err)
		}
	}
}
