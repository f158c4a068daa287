package mcpbridge_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolsvc/toolsvc/internal/server"
)

// maxListedBytesPerTool is the most the default tools/list may cost per
// built-in tool on average: each tool entry's JSON bytes.
const maxListedBytesPerTool = 3000

// listedTools is the first tools/list page of c, each tool entry's JSON as
// served.
func listedTools(t *testing.T, c *client) []json.RawMessage {
	t.Helper()
	var page struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor"`
	}
	c.result("tools/list", map[string]any{}, &page)
	if page.NextCursor != "" {
		t.Fatal("the built-in tools take more than one page")
	}
	return page.Tools
}

// TestToolsListAffordable holds the default listing of the built-in tools
// to maxListedBytesPerTool on average (docs/BENCHMARKS.md, "What tools/list
// costs an agent"), and checks that --mcp-list-full-schemas still lists
// the whole schemas.
func TestToolsListAffordable(t *testing.T) {
	sizes := func(configure func(*server.Config)) (total int, per map[string]int) {
		srv := newServer(t, configure)
		c := newClient(t, srv.HTTP)
		c.initialize("bytes")
		tools := listedTools(t, c)
		if len(tools) != srv.Registry().Len() || len(tools) < 10 {
			t.Fatalf("listed %d tools, the registry has %d", len(tools), srv.Registry().Len())
		}
		per = map[string]int{}
		for _, raw := range tools {
			var tool struct{ Name string }
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Fatal(err)
			}
			per[tool.Name] = len(raw)
			total += len(raw)
		}
		return total, per
	}
	abridged, per := sizes(nil)
	full, fullPer := sizes(func(c *server.Config) { c.MCP.ListFullSchemas = true })
	n := len(per)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range per {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Logf("%-20s full %6d B  default %5d B", name, fullPer[name], per[name])
	}
	t.Logf("%d tools: full %d B (%d B per tool), default %d B (%d B per tool)", n, full, full/n, abridged, abridged/n)
	if abridged > maxListedBytesPerTool*n {
		t.Errorf("the default tools/list costs %d B per tool on average, more than %d B", abridged/n, maxListedBytesPerTool)
	}
	if full <= abridged*4 {
		t.Errorf("--mcp-list-full-schemas lists %d B, the default %d B: the full schemas are missing", full, abridged)
	}
}

// refuseRemote is a schema loader that loads nothing: a client that cannot
// resolve a remote $ref, as the TypeScript SDK, the Go SDK and mcp-go.
type refuseRemote struct{}

func (refuseRemote) Load(url string) (any, error) {
	return nil, errors.New("no remote schemas: " + url)
}

func compileSchema(t *testing.T, name string, raw []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseRemote{})
	url := "urn:test:" + name
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// TestListedOutputSchemaIsTheWholeContractAbridged: every tool's listed
// outputSchema compiles without resolving anything remote and names the
// resource that holds the whole one; that resource is the outputSchema
// --mcp-list-full-schemas lists; and the results of every tool (its first
// example, and an invalid call's ToolError) are accepted by both.
func TestListedOutputSchemaIsTheWholeContractAbridged(t *testing.T) {
	srv := newServer(t, nil)
	c := newClient(t, srv.HTTP)
	c.initialize("schemas")
	fullSrv := newServer(t, func(c *server.Config) { c.MCP.ListFullSchemas = true })
	fc := newClient(t, fullSrv.HTTP)
	fc.initialize("schemas-full")
	wholeListed := map[string]json.RawMessage{}
	for _, raw := range listedTools(t, fc) {
		var tool struct {
			Name         string
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		wholeListed[tool.Name] = tool.OutputSchema
	}

	type tool struct {
		Name         string          `json:"name"`
		InputSchema  map[string]any  `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
		Meta         struct {
			Examples []struct {
				Params map[string]any `json:"params"`
			} `json:"examples"`
		} `json:"_meta"`
	}
	var tools []tool
	for _, raw := range listedTools(t, c) {
		var tl tool
		if err := json.Unmarshal(raw, &tl); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	// sync-knowledge first, so that the knowledge tools' examples find items.
	slices.SortStableFunc(tools, func(a, b tool) int {
		return boolRank(b.Name == "sync-knowledge") - boolRank(a.Name == "sync-knowledge")
	})
	succeeded := 0
	for _, tl := range tools {
		if bytes.Contains(tl.OutputSchema, []byte(`"$ref"`)) {
			t.Errorf("%s: the listed outputSchema has a $ref", tl.Name)
		}
		uri := "toolsvc://tools/" + tl.Name + "/output-schema"
		if !bytes.Contains(tl.OutputSchema, []byte(uri)) {
			t.Errorf("%s: the listed outputSchema does not name %s", tl.Name, uri)
		}
		if _, ok := tl.InputSchema["properties"]; !ok && len(tl.InputSchema) > 0 && tl.InputSchema["type"] != "object" {
			t.Errorf("%s: inputSchema %v", tl.Name, tl.InputSchema)
		}
		var read struct {
			Contents []struct {
				URI, MIMEType, Text string
			} `json:"contents"`
		}
		c.result("resources/read", map[string]any{"uri": uri}, &read)
		if len(read.Contents) != 1 || read.Contents[0].URI != uri || read.Contents[0].MIMEType != "application/schema+json" {
			t.Fatalf("%s: resources/read = %+v", tl.Name, read)
		}
		whole := []byte(read.Contents[0].Text)
		if !jsonEqual(t, whole, wholeListed[tl.Name]) {
			t.Errorf("%s: the resource's outputSchema differs from the one --mcp-list-full-schemas lists", tl.Name)
		}
		listed, wholeSchema := compileSchema(t, tl.Name+"-listed", tl.OutputSchema), compileSchema(t, tl.Name+"-whole", whole)

		args := map[string]any{}
		if len(tl.Meta.Examples) > 0 && tl.Meta.Examples[0].Params != nil {
			args = tl.Meta.Examples[0].Params
		}
		// Its example, and a call with an argument no tool has (a ToolError).
		for i, a := range []map[string]any{args, {"noSuchArgument": true}} {
			var res struct {
				StructuredContent any  `json:"structuredContent"`
				IsError           bool `json:"isError"`
			}
			c.result("tools/call", map[string]any{"name": tl.Name, "arguments": a}, &res)
			if res.StructuredContent == nil {
				t.Fatalf("%s: no structuredContent", tl.Name)
			}
			if i == 1 && !res.IsError {
				t.Errorf("%s: an unknown argument did not fail", tl.Name)
			}
			if i == 0 && !res.IsError {
				succeeded++
			}
			if err := wholeSchema.Validate(res.StructuredContent); err != nil {
				t.Errorf("%s (isError %v): the whole outputSchema refuses the result: %v", tl.Name, res.IsError, err)
			}
			if err := listed.Validate(res.StructuredContent); err != nil {
				t.Errorf("%s (isError %v): the listed outputSchema refuses the result: %v", tl.Name, res.IsError, err)
			}
		}
		// The listed schema still checks the tool's data: a wrong type fails.
		bad := map[string]any{"data": "not an object"}
		if listed.Validate(bad) == nil {
			t.Errorf("%s: the listed outputSchema accepts data that is not an object", tl.Name)
		}
	}
	if succeeded < len(tools)/2 {
		t.Errorf("only %d of %d examples succeeded: too few results validated", succeeded, len(tools))
	}
}

// TestOutputSchemaResourceFollowsVisibility: the whole outputSchema of a
// tool the caller may not see reads as not found, like a tool that does not
// exist; a tool it may see reads.
func TestOutputSchemaResourceFollowsVisibility(t *testing.T) {
	srv := newAuthServer(t, nil)
	c := newClient(t, srv.HTTP)
	c.header.Set("Authorization", "Bearer "+keyMemory)
	c.initialize("reader")
	// A tool the caller may not see answers as one that does not exist.
	r := c.call("resources/read", map[string]any{"uri": "toolsvc://tools/no-such-tool/output-schema"})
	if r.Error == nil {
		t.Fatalf("a missing tool's output schema reads: %s", r.Result)
	}
	missing := r.Error.Code
	for uri, visible := range map[string]bool{
		"toolsvc://tools/search-memories/output-schema": true,
		"toolsvc://tools/sync-knowledge/output-schema":  false,
		"toolsvc://tools/no-such-tool/output-schema":    false,
		"toolsvc://tools//output-schema":                false,
	} {
		r := c.call("resources/read", map[string]any{"uri": uri})
		if got := r.Error == nil; got != visible {
			t.Errorf("resources/read %s: readable %v, want %v (%s)", uri, got, visible, r.Result)
		}
		if r.Error != nil && r.Error.Code != missing {
			t.Errorf("resources/read %s: error %d, a missing tool's is %d", uri, r.Error.Code, missing)
		}
	}
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, x) == mustJSON(t, y)
}
