package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// everythingServer is the path of the MCP reference server that exercises
// every feature (@modelcontextprotocol/server-everything, version pinned
// in test/mcp/package.json), installed with test/mcp's locked packages.
func everythingServer(t *testing.T) string {
	t.Helper()
	filesystemServer(t) // npm ci in test/mcp, once
	dir := filepath.Join(testenv.RepoRoot(t), "test", "mcp")
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		// An install older than the lock file: bring it up to date.
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in test/mcp: %v\n%s", err, out)
		}
	}
	return entry
}

// everythingUpstreams is examples/upstreams/everything.yaml as
// docs/ADDING-A-TOOL.md shows it, with the command pointed at the
// installed server.
func everythingUpstreams(t *testing.T) string {
	t.Helper()
	example, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "examples", "upstreams", "everything.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmdRE := regexp.MustCompile(`(?m)^      command: .*$`)
	if !cmdRE.Match(example) {
		t.Fatal("examples/upstreams/everything.yaml no longer has its command line")
	}
	body := cmdRE.ReplaceAllLiteralString(string(example), "      command: [node, "+everythingServer(t)+", stdio]")
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestEverythingServerServedWhole serves the MCP reference server
// server-everything with examples/upstreams/everything.yaml: its tools
// listed under their mapped names and called on gRPC, REST and MCP (both
// revisions), their content-only results checked against the overlays'
// output schemas; its resources listed and read and its prompts listed and
// got under the upstream's namespace, over a 2025-11-25 and a 2026-07-28
// client, with the permissions the operator granted, and a URI outside
// the namespace, a missing and an unknown prompt argument refused naming
// the field.
func TestEverythingServerServedWhole(t *testing.T) {
	s, c := newUpstreamServer(t, everythingUpstreams(t))

	want := []string{"echo-message", "get-annotated-message", "get-env", "get-everything-prompt", "get-resource-links",
		"get-resource-reference", "get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
		"list-everything-prompts", "list-everything-resources", "show-everything-resource", "simulate-research-query",
		"toggle-simulated-logging", "toggle-subscriber-updates", "trigger-elicitation-request", "trigger-long-running-operation",
		"trigger-sampling-request", "trigger-url-elicitation"}
	h := upstreamHealth(t, s)
	var served []string
	for _, x := range h["tools_served"].([]any) {
		served = append(served, strings.TrimSuffix(x.(string), "@1.0.0"))
	}
	slices.Sort(served)
	if !slices.Equal(served, want) || len(h["tools_refused"].([]any)) != 0 {
		t.Fatalf("everything serves %v, refuses %v; want %v", served, h["tools_refused"], want)
	}

	text := func(o Outcome) string {
		var b strings.Builder
		content, _ := o.Result["data"].(map[string]any)["content"].([]any)
		for _, x := range content {
			if s, ok := x.(map[string]any)["text"].(string); ok {
				b.WriteString(s)
			}
		}
		return b.String()
	}
	trs := append(transportsOf(s), MCP{S: s, Modern: true})
	for _, tr := range trs {
		for _, k := range []struct {
			tool string
			args map[string]any
			want string // in the text blocks of data.content
		}{
			{"echo-message", map[string]any{"message": "hello " + tr.Name()}, "Echo: hello " + tr.Name()},
			{"get-sum", map[string]any{"a": 2, "b": 3}, "The sum of 2 and 3 is 5."},
			{"get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 2}, "Returning resource reference for Resource 2"},
			{"get-resource-links", map[string]any{"count": 2}, "Here are 2 resource links"},
			{"get-annotated-message", map[string]any{"messageType": "success"}, "Operation completed successfully"},
		} {
			o := call(t, tr, c.Full, k.tool, k.args)
			if o.Code != "OK" || !strings.Contains(text(o), k.want) {
				t.Fatalf("%s %s: %s %v %v, want text containing %q", tr.Name(), k.tool, o.Code, o.Error, o.Result["data"], k.want)
			}
		}
		o := call(t, tr, c.Full, "get-tiny-image", map[string]any{})
		blocks, _ := o.Result["data"].(map[string]any)["content"].([]any)
		if o.Code != "OK" || !slices.ContainsFunc(blocks, func(b any) bool {
			m := b.(map[string]any)
			return m["type"] == "image" && m["mimeType"] == "image/png" && len(m["data"].(string)) > 100
		}) {
			t.Fatalf("%s get-tiny-image: %s %v", tr.Name(), o.Code, o.Error)
		}
		o = call(t, tr, c.Full, "get-structured-content", map[string]any{"location": "Chicago"})
		if d, _ := o.Result["data"].(map[string]any); o.Code != "OK" || d["conditions"] == nil || d["humidity"] == nil {
			t.Fatalf("%s get-structured-content: %s %v %v", tr.Name(), o.Code, o.Error, o.Result)
		}
		// A closed inputSchema refuses what the tool does not name.
		if o := call(t, tr, c.Full, "get-sum", map[string]any{"a": 1, "b": 2, "c": 3}); o.Code != "INVALID_INPUT" {
			t.Fatalf("%s get-sum with an unnamed argument: %s %v", tr.Name(), o.Code, o.Error)
		}

		// Resources and prompts through their tools, on every transport.
		o = call(t, tr, c.Full, "show-everything-resource", map[string]any{"uri": "everything+demo://resource/dynamic/text/4"})
		contents, _ := o.Result["data"].(map[string]any)["contents"].([]any)
		if o.Code != "OK" || len(contents) != 1 || contents[0].(map[string]any)["uri"] != "everything+demo://resource/dynamic/text/4" ||
			!strings.HasPrefix(contents[0].(map[string]any)["text"].(string), "Resource 4:") {
			t.Fatalf("%s show-everything-resource: %s %v %v", tr.Name(), o.Code, o.Error, o.Result)
		}
		o = call(t, tr, c.Full, "show-everything-resource", map[string]any{"uri": "demo://resource/dynamic/text/4"})
		if o.Code != "INVALID_INPUT" || !strings.Contains(jsonText(o.Error), `"uri"`) || !strings.Contains(jsonText(o.Error), "everything+") {
			t.Fatalf("%s show-everything-resource outside the namespace: %s %v", tr.Name(), o.Code, o.Error)
		}
		o = call(t, tr, c.Full, "get-everything-prompt", map[string]any{"name": "everything/args-prompt",
			"arguments": []any{map[string]any{"name": "city", "value": "Lisbon"}}})
		if o.Code != "OK" || !strings.Contains(jsonText(o.Result["data"]), "What's weather in Lisbon?") {
			t.Fatalf("%s get-everything-prompt: %s %v %v", tr.Name(), o.Code, o.Error, o.Result)
		}
		if o := call(t, tr, c.NoPermission, "show-everything-resource", map[string]any{"uri": "everything+demo://resource/dynamic/text/4"}); o.Code == "OK" {
			t.Fatalf("%s show-everything-resource without everything:read: %v", tr.Name(), o.Result)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range []MCP{{S: s}, {S: s, Modern: true}} {
		proto := func(token, method string, params map[string]any, v any) *RPCError {
			t.Helper()
			res, rerr, err := m.Protocol(ctx, token, method, params)
			if err != nil {
				t.Fatalf("%s %s: %v", m.Name(), method, err)
			}
			if rerr == nil && v != nil {
				if err := json.Unmarshal(res, v); err != nil {
					t.Fatalf("%s %s: %v: %s", m.Name(), method, err, res)
				}
			}
			return rerr
		}
		var list struct {
			Resources []struct{ URI, Name string } `json:"resources"`
		}
		if e := proto(c.Full, "resources/list", nil, &list); e != nil || !slices.ContainsFunc(list.Resources, func(r struct{ URI, Name string }) bool {
			return r.URI == "everything+demo://resource/static/document/architecture.md"
		}) {
			t.Fatalf("%s resources/list = %v %+v", m.Name(), e, list.Resources)
		}
		var tpl struct {
			ResourceTemplates []struct{ URITemplate string } `json:"resourceTemplates"`
		}
		if e := proto(c.Full, "resources/templates/list", nil, &tpl); e != nil || !slices.ContainsFunc(tpl.ResourceTemplates, func(r struct{ URITemplate string }) bool {
			return r.URITemplate == "everything+demo://resource/dynamic/text/{resourceId}"
		}) {
			t.Fatalf("%s resources/templates/list = %v %+v", m.Name(), e, tpl.ResourceTemplates)
		}
		var read struct {
			Contents []struct{ URI, MimeType, Text, Blob string } `json:"contents"`
		}
		if e := proto(c.Full, "resources/read", map[string]any{"uri": "everything+demo://resource/static/document/features.md"}, &read); e != nil ||
			len(read.Contents) != 1 || read.Contents[0].URI != "everything+demo://resource/static/document/features.md" || read.Contents[0].Text == "" {
			t.Fatalf("%s resources/read = %v %+v", m.Name(), e, read)
		}
		read.Contents = nil
		if e := proto(c.Full, "resources/read", map[string]any{"uri": "everything+demo://resource/dynamic/blob/3"}, &read); e != nil ||
			len(read.Contents) != 1 || read.Contents[0].Blob == "" || read.Contents[0].Text != "" {
			t.Fatalf("%s resources/read of a blob = %v %+v", m.Name(), e, read)
		}
		if e := proto(c.Full, "resources/read", map[string]any{"uri": "demo://resource/dynamic/text/1"}, nil); e == nil || (e.Code != -32002 && e.Code != -32602) ||
			!strings.Contains(e.Message, "everything+{uri}") {
			t.Fatalf("%s resources/read outside every namespace = %+v", m.Name(), e)
		}

		var prompts struct {
			Prompts []struct {
				Name      string
				Arguments []struct {
					Name     string
					Required bool
				}
			} `json:"prompts"`
		}
		if e := proto(c.Full, "prompts/list", nil, &prompts); e != nil || len(prompts.Prompts) < 3 || !slices.ContainsFunc(prompts.Prompts, func(p struct {
			Name      string
			Arguments []struct {
				Name     string
				Required bool
			}
		}) bool {
			return p.Name == "everything/args-prompt" && len(p.Arguments) == 2 && p.Arguments[0].Name == "city" && p.Arguments[0].Required
		}) {
			t.Fatalf("%s prompts/list = %v %+v", m.Name(), e, prompts)
		}
		var got struct {
			Messages []struct {
				Role    string
				Content map[string]any
			} `json:"messages"`
		}
		if e := proto(c.Full, "prompts/get", map[string]any{"name": "everything/args-prompt", "arguments": map[string]any{"city": "Paris", "state": "IDF"}}, &got); e != nil ||
			len(got.Messages) != 1 || got.Messages[0].Role != "user" || !strings.Contains(got.Messages[0].Content["text"].(string), "Paris") {
			t.Fatalf("%s prompts/get = %v %+v", m.Name(), e, got)
		}
		// An embedded resource is named under the namespace, as resources/read reads it.
		got.Messages = nil
		if e := proto(c.Full, "prompts/get", map[string]any{"name": "everything/resource-prompt", "arguments": map[string]any{"resourceType": "Text", "resourceId": "2"}}, &got); e != nil ||
			len(got.Messages) != 2 || !strings.Contains(jsonText(got.Messages[1].Content), `"uri":"everything+demo://resource/dynamic/text/2"`) {
			t.Fatalf("%s prompts/get resource-prompt = %v %+v", m.Name(), e, got)
		}
		for _, bad := range []struct {
			args  map[string]any
			field string
		}{
			{map[string]any{"state": "IDF"}, "arguments.city"},
			{map[string]any{"city": "Paris", "country": "FR"}, "country"},
		} {
			e := proto(c.Full, "prompts/get", map[string]any{"name": "everything/args-prompt", "arguments": bad.args}, nil)
			if e == nil || e.Code != -32602 || !strings.Contains(e.Message, bad.field) || !strings.Contains(string(e.Data), "fieldViolations") {
				t.Fatalf("%s prompts/get with %v = %+v, want invalid params naming %s", m.Name(), bad.args, e, bad.field)
			}
		}
		if e := proto(c.Full, "prompts/get", map[string]any{"name": "everything/no-such-prompt"}, nil); e == nil || e.Code != -32602 || !strings.Contains(e.Message, "everything/args-prompt") {
			t.Fatalf("%s prompts/get of an unknown prompt = %+v", m.Name(), e)
		}
		if e := proto(c.Full, "prompts/get", map[string]any{"name": "simple-prompt"}, nil); e == nil || e.Code != -32602 || !strings.Contains(e.Message, "everything/") {
			t.Fatalf("%s prompts/get outside every namespace = %+v", m.Name(), e)
		}

		// A caller the operator's grant does not cover sees none of them.
		prompts.Prompts = nil
		if e := proto(c.NoPermission, "prompts/list", nil, &prompts); e != nil || len(prompts.Prompts) != 0 {
			t.Fatalf("%s prompts/list without everything:prompt = %v %+v", m.Name(), e, prompts)
		}
		list.Resources = nil
		if e := proto(c.NoPermission, "resources/list", nil, &list); e != nil || slices.ContainsFunc(list.Resources, func(r struct{ URI, Name string }) bool {
			return strings.HasPrefix(r.URI, "everything+")
		}) {
			t.Fatalf("%s resources/list without everything:read = %v %+v", m.Name(), e, list)
		}
		if e := proto(c.NoPermission, "prompts/get", map[string]any{"name": "everything/simple-prompt"}, nil); e == nil {
			t.Fatalf("%s prompts/get without everything:prompt answered", m.Name())
		}
	}

	// The server's resources list changes when a tool adds one: a 2025
	// client's event stream hears it, and the next listing shows it.
	events := listenMCP(t, s, c.Full)
	if o := call(t, MCP{S: s}, c.Full, "gzip-file-as-resource", map[string]any{"name": "relayed.txt.gz",
		"data": "data:text/plain;base64,aGVsbG8=", "outputType": "resourceLink"}); o.Code != "OK" {
		t.Fatalf("gzip-file-as-resource: %s %v", o.Code, o.Error)
	}
	events.await(t, "notifications/resources/list_changed")
	res, rerr, err := MCP{S: s}.Protocol(ctx, c.Full, "resources/list", nil)
	if err != nil || rerr != nil || !strings.Contains(string(res), `"everything+demo://resource/session/relayed.txt.gz"`) {
		t.Fatalf("resources/list after the change = %v %v %s", err, rerr, res)
	}

	// Each read and get is audited as the tool call it is: the MCP
	// protocol methods included, and the refusals of the caller without
	// the grant.
	deadline := time.Now().Add(10 * time.Second)
	for {
		allowed, _, err := s.Store().ListAudit(ctx, store.AuditFilter{Tenant: "acme", Tool: "get-everything-prompt", Decision: "allow", Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		denied, _, err := s.Store().ListAudit(ctx, store.AuditFilter{Tenant: "acme", Tool: "show-everything-resource", Subject: "noperm", Limit: store.MaxAuditLimit})
		if err != nil {
			t.Fatal(err)
		}
		byMCP := slices.ContainsFunc(allowed, func(e store.AuditEvent) bool { return e.Transport == "mcp" })
		if byMCP && len(denied) >= 4 && denied[0].Decision == "deny" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit: %d allowed prompt gets (by MCP: %v), %d refused resource reads of noperm %+v", len(allowed), byMCP, len(denied), denied)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEverythingServerAsks: server-everything's tools that ask the user
// (a form and a URL-mode elicitation) and the client's model (sampling),
// and its tool that reports progress, served through toolsvc and answered
// by a go-sdk client of each revision: a 2025 client gets the server's
// requests on the call's stream, a 2026 client gets input_required and
// follows up; the answers reach the server unchanged (its result shows
// them) and its results come back checked against the overlays' output
// schema. A client that declared neither capability is refused, naming it.
func TestEverythingServerAsks(t *testing.T) {
	s, c := newUpstreamServer(t, everythingUpstreams(t))
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			g := &goAnswerer{}
			cs := connectAnswerer(t, s, c.Full, rev, g, true)
			text := func(tool string, args map[string]any, progress bool) string {
				t.Helper()
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				p := &mcp.CallToolParams{Name: tool, Arguments: args}
				if progress {
					p.SetProgressToken("everything-" + rev)
				}
				res, err := cs.CallTool(ctx, p)
				if err != nil {
					t.Fatalf("tools/call %s: %v", tool, err)
				}
				data, te := toolData(t, res)
				if te != nil {
					t.Fatalf("%s: %v", tool, te)
				}
				var b strings.Builder
				for _, x := range data["content"].([]any) {
					if s, ok := x.(map[string]any)["text"].(string); ok {
						b.WriteString(s + "\n")
					}
				}
				return b.String()
			}
			if got := text("trigger-elicitation-request", map[string]any{}, false); !strings.Contains(got, "- Name: Ada Lovelace") {
				t.Fatalf("trigger-elicitation-request answered %q", got)
			}
			url := "https://example.com/consent?state=" + rev
			if got := text("trigger-url-elicitation", map[string]any{"url": url}, false); !strings.Contains(got, "User completed the URL elicitation flow") || !strings.Contains(got, "URL: "+url) {
				t.Fatalf("trigger-url-elicitation answered %q", got)
			}
			if got := text("trigger-sampling-request", map[string]any{"prompt": "Say hello.", "maxTokens": 20}, false); !strings.Contains(got, `"model": "go-model"`) || !strings.Contains(got, "Blue sky.") {
				t.Fatalf("trigger-sampling-request answered %q", got)
			}
			g.mu.Lock()
			asked := strings.Join(g.asked, "\n")
			g.mu.Unlock()
			for _, want := range []string{`"message":"Please provide inputs for the following fields:"`, `"url":"` + url + `"`, `"text":"Resource trigger-sampling-request context: Say hello."`} {
				if !strings.Contains(asked, want) {
					t.Fatalf("the client was not asked %s; asked:\n%s", want, asked)
				}
			}
			if got := text("trigger-long-running-operation", map[string]any{"duration": 1, "steps": 2}, true); !strings.Contains(got, "completed") {
				t.Fatalf("trigger-long-running-operation answered %q", got)
			}
			progress := g.heard(2)
			if progress != "1/2 ,2/2 " {
				t.Fatalf("progress heard: %q", progress)
			}

			bare := connectAnswerer(t, s, c.Full, rev, &goAnswerer{}, false)
			for _, k := range []struct {
				tool  string
				args  map[string]any
				lacks string
			}{
				{"trigger-elicitation-request", map[string]any{}, "did not declare the elicitation capability"},
				{"trigger-url-elicitation", map[string]any{"url": url}, "did not declare URL-mode elicitation"},
				{"trigger-sampling-request", map[string]any{"prompt": "Say hello."}, "did not declare the sampling capability"},
			} {
				res, err := bare.CallTool(t.Context(), &mcp.CallToolParams{Name: k.tool, Arguments: k.args})
				if err != nil {
					t.Fatal(err)
				}
				if _, te := toolData(t, res); te == nil || !strings.Contains(jsonText(te), k.lacks) {
					t.Fatalf("%s by a client without the capability: %v", k.tool, te)
				}
			}
		})
	}
}
