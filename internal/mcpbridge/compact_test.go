package mcpbridge

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

func TestCapDescription(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"zero keeps it whole", "Search  memories\nby text.", 0, "Search  memories\nby text."},
		{"short is only normalised", "Search  memories\n by text.", 140, "Search memories by text."},
		{"cut at a word boundary", "Search the caller's memories by meaning and words", 20, "Search the caller's…"},
		{"a boundary right at the cut", "alpha beta gamma", 11, "alpha beta…"},
		{"trailing punctuation dropped", "alpha, beta gamma", 9, "alpha…"},
		{"one long word is cut mid-word", "Supercalifragilistic", 8, "Superca…"},
		{"runes, not bytes", "über größe straße weiß", 12, "über größe…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := capDescription(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("capDescription(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if tc.max > 0 && utf8.RuneCountInString(got) > tc.max {
				t.Errorf("%q is %d characters, more than %d", got, utf8.RuneCountInString(got), tc.max)
			}
		})
	}
}

func TestStripSchema(t *testing.T) {
	in := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
		"title": "AddMemoryRequest", "description": "What to remember.",
		"required": []any{"content", "title"},
		"properties": map[string]any{
			// A property named like a keyword is data: it stays.
			"title":   map[string]any{"type": "string", "description": "a title", "maxLength": 80, "default": ""},
			"content": map[string]any{"type": "string", "examples": []any{"x"}, "minLength": 1, "$comment": "c"},
			"layer": map[string]any{"enum": []any{"user", "team"}, "markdownDescription": "**m**",
				"anyOf": []any{map[string]any{"type": "string", "example": "user", "const": "user"}}},
		},
	}
	got, _ := json.Marshal(stripSchema(in))
	want := `{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{` +
		`"content":{"minLength":1,"type":"string"},` +
		`"layer":{"anyOf":[{"const":"user","type":"string"}],"enum":["user","team"]},` +
		`"title":{"maxLength":80,"type":"string"}},"required":["content","title"],"type":"object"}`
	if string(got) != want {
		t.Errorf("stripSchema =\n%s\nwant\n%s", got, want)
	}
	if _, ok := in["title"]; !ok {
		t.Error("stripSchema modified its input")
	}
}

// TestCompactionIsOptIn: by default tools/list has the whole descriptions
// and input documentation (the outputSchema is abridged either way,
// outputschema.go); with compaction every description is capped and the input schemas lose
// their documentation keys, and the page is smaller.
func TestCompactionIsOptIn(t *testing.T) {
	reg := testRegistry(t)
	full, err := newToolIndex(reg, compaction{})
	if err != nil {
		t.Fatal(err)
	}
	small, err := newToolIndex(reg, compaction{descMax: 60, stripSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	fullBytes, smallBytes := 0, 0
	for i, tool := range full.latest {
		fb, err := renderTool(tool, full.errSchema)
		if err != nil {
			t.Fatal(err)
		}
		if string(fb) != string(full.rendered[i]) {
			t.Errorf("%s: the default index differs from renderTool", tool.Name)
		}
		var f, s mcpTool
		if err := json.Unmarshal(full.rendered[i], &f); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(small.rendered[i], &s); err != nil {
			t.Fatal(err)
		}
		if f.Description != tool.Def.GetDescription() {
			t.Errorf("%s: default description %q, want the contract's", tool.Name, f.Description)
		}
		if utf8.RuneCountInString(s.Description) > 60 || (utf8.RuneCountInString(f.Description) > 60 && !strings.HasSuffix(s.Description, ellipsis)) {
			t.Errorf("%s: compact description %q", tool.Name, s.Description)
		}
		if strings.Contains(string(mustJSON(t, s.InputSchema)), `"description":`) && !hasPropertyNamed(s.InputSchema, "description") {
			t.Errorf("%s: compact inputSchema keeps descriptions", tool.Name)
		}
		if string(mustJSON(t, s.OutputSchema)) != string(mustJSON(t, stripSchema(f.OutputSchema))) || string(s.Meta) != string(f.Meta) ||
			s.Name != f.Name || s.Annotations != f.Annotations {
			t.Errorf("%s: compaction changed more than the description and schemas", tool.Name)
		}
		fullBytes += len(full.rendered[i])
		smallBytes += len(small.rendered[i])
	}
	if smallBytes >= fullBytes {
		t.Errorf("compacted tools take %d bytes, the full ones %d", smallBytes, fullBytes)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hasPropertyNamed(s map[string]any, name string) bool {
	props, _ := s["properties"].(map[string]any)
	_, ok := props[name]
	return ok
}

// testRegistry is the built-in contracts, with their source comments.
func testRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg, err := registry.New([]registry.Service{
		{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: memoryv1.UnimplementedMemoryServiceServer{}},
		{Desc: &knowledgev1.KnowledgeService_ServiceDesc, Impl: knowledgev1.UnimplementedKnowledgeServiceServer{}},
		{Desc: &syncv1.SyncService_ServiceDesc, Impl: syncv1.UnimplementedSyncServiceServer{}},
		{Desc: &auditv1.AuditService_ServiceDesc, Impl: auditv1.UnimplementedAuditServiceServer{}},
	}, registry.WithSourceInfo(descriptor.Set))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
