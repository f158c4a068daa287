package upstream

import (
	"strings"
	"testing"
)

// TestParseFederated: the resources and prompts an operator grants are
// checked at load, each problem naming its key: a block without a
// permission, a permission outside the upstream's namespace that
// allow_permissions does not list, two upstreams under one namespace, a
// block on a gRPC service, renames of resources, content_as_data without
// the output schema it is checked against.
func TestParseFederated(t *testing.T) {
	mcp := func(name, extra string) string {
		return "  - {name: " + name + ", mcp: {command: [srv]}" + extra + "}\n"
	}
	cases := []struct {
		name, body, want string
	}{
		{"no permission", mcp("a", ", resources: {namespace: x}"), "resources.permission: give the permission"},
		{"bad permission", mcp("a", ", prompts: {permission: everything}"), `prompts.permission: "everything" is not a permission`},
		{"foreign permission", mcp("a", ", prompts: {permission: memory:read}"), `prompts.permission: "memory:read" is outside the upstream's namespace a:`},
		{"shared namespace", mcp("a", ", resources: {permission: a:read, namespace: docs}") + mcp("b", ", resources: {permission: b:read, namespace: docs}"),
			`upstream b: resources.namespace "docs" is a's too`},
		{"name as namespace", mcp("a", ", prompts: {permission: a:read}") + mcp("b", ", prompts: {permission: b:read, namespace: a}"),
			`upstream b: prompts.namespace "a" is a's too`},
		{"bad namespace", mcp("a", ", resources: {permission: a:read, namespace: Docs!}"), `resources.namespace "Docs!"`},
		{"resource renames", mcp("a", ", resources: {permission: a:read, renames: {x: y}}"), "resources.renames: only prompts are renamed"},
		{"bad prompt rename", mcp("a", ", prompts: {permission: a:read, renames: {x: 'two words'}}"), `prompts.renames[x]: "two words"`},
		{"grpc service", "  - {name: a, address: 127.0.0.1:9000, contracts: {reflection: true}, resources: {permission: a:read}}\n", "resources: only an MCP server"},
		{"content_as_data alone", mcp("a", ", overlays: {echo: {content_as_data: true}}"), "content_as_data: give the output_schema"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte("upstreams:\n"+c.body), t.TempDir())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	f, err := Parse([]byte("upstreams:\n"+mcp("a", ", allow_permissions: [docs:read], resources: {permission: docs:read}, prompts: {permission: a:prompt, renames: {simple_prompt: simple}}")), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u := &Upstream{cfg: f.Upstreams[0]}
	if got := u.servedPrompt("simple_prompt"); got != "simple" {
		t.Fatalf("renamed prompt served as %q", got)
	}
	if got := u.servedPrompt("two words"); got != "" {
		t.Fatalf("a prompt name with a space is served as %q, want none", got)
	}
	tools, err := u.federatedTools()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range tools {
		names = append(names, x.desc.Name+" "+x.spec.GetPermissions()[0])
	}
	if strings.Join(names, ", ") != "list-a-resources docs:read, show-a-resource docs:read, list-a-prompts a:prompt, get-a-prompt a:prompt" {
		t.Fatalf("federated tools = %v", names)
	}
}
