package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"

	"github.com/toolsvc/toolsvc/internal/rest/gateway"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// servedDocument fetches /openapi.json from a real server.
func servedDocument(tb testing.TB) []byte {
	tb.Helper()
	ts := newServer(tb, nil)
	resp := do(tb, request{URL: ts.HTTP + "/openapi.json"})
	if resp.Status != 200 {
		tb.Fatalf("status = %d: %s", resp.Status, resp.Body)
	}
	return resp.Body
}

// TestOpenAPIValidates validates the served document with kin-openapi: it
// must load as OpenAPI 2.0, convert to 3.0 and pass 3.0 validation,
// examples included (they must match the constrained schemas).
func TestOpenAPIValidates(t *testing.T) {
	body := servedDocument(t)
	var doc2 openapi2.T
	if err := json.Unmarshal(body, &doc2); err != nil {
		t.Fatalf("not an OpenAPI 2.0 document: %v", err)
	}
	doc3, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		t.Fatalf("convert to OpenAPI 3: %v", err)
	}
	if err := doc3.Validate(context.Background()); err != nil {
		t.Fatalf("invalid OpenAPI document: %v", err)
	}
}

// TestOpenAPIContent checks the enrichment: tools, constraints, security
// and error responses.
func TestOpenAPIContent(t *testing.T) {
	var doc struct {
		Security            []map[string][]string     `json:"security"`
		SecurityDefinitions map[string]map[string]any `json:"securityDefinitions"`
		Responses           map[string]map[string]any `json:"responses"`
		Definitions         map[string]map[string]any `json:"definitions"`
		Paths               map[string]map[string]struct {
			Description string                    `json:"description"`
			Tool        map[string]any            `json:"x-toolsvc-tool"`
			Responses   map[string]map[string]any `json:"responses"`
			Parameters  []map[string]any          `json:"parameters"`
			Security    *[]map[string][]string    `json:"security"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(servedDocument(t), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.SecurityDefinitions["bearer"]["name"] != "Authorization" || len(doc.Security) != 1 {
		t.Errorf("bearer security scheme missing: %v %v", doc.SecurityDefinitions, doc.Security)
	}
	if doc.Responses["TooManyRequests"]["headers"] == nil || doc.Responses["Unauthorized"]["headers"] == nil {
		t.Errorf("429 and 401 must declare Retry-After and WWW-Authenticate: %v", doc.Responses)
	}

	tools := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			for _, code := range []string{"400", "404", "500", "503"} {
				if op.Responses[code] == nil {
					t.Errorf("%s %s: no %s response", method, path, code)
				}
			}
			if op.Security == nil {
				for _, code := range []string{"401", "403", "429", "504"} {
					if op.Responses[code] == nil {
						t.Errorf("%s %s: no %s response", method, path, code)
					}
				}
			}
			if op.Tool != nil {
				tools++
				if op.Description != op.Tool["description"] || op.Tool["examples"] == nil || op.Tool["permissions"] == nil {
					t.Errorf("%s %s: tool description, examples or permissions missing", method, path)
				}
			}
		}
	}
	// Ten tools, and query-knowledge has an additional GET binding.
	if tools != 11 {
		t.Errorf("%d operations carry x-toolsvc-tool, want 11", tools)
	}

	add := doc.Definitions["v1AddMemoryRequest"]
	content, _ := add["properties"].(map[string]any)["content"].(map[string]any)
	if content["minLength"] != 1.0 || content["maxLength"] != 16384.0 {
		t.Errorf("add-memory content constraints = %v", content)
	}
	if req, _ := add["required"].([]any); len(req) != 1 || req[0] != "content" || add["example"] == nil {
		t.Errorf("add-memory required %v, example %v", add["required"], add["example"])
	}
	for _, p := range doc.Paths["/v1/memories/{memoryId}"]["delete"].Parameters {
		if p["name"] == "memoryId" && p["pattern"] != "^mem_[0-9a-f]{32}$" {
			t.Errorf("memoryId pattern = %v", p["pattern"])
		}
	}
	for _, def := range []string{"v1ToolError", "ErrorResponse", "SeedToolCall"} {
		if doc.Definitions[def] == nil {
			t.Errorf("definition %s missing", def)
		}
	}
}

// TestOpenAPIGolden compares the served document with
// testdata/openapi.golden.json; run with -update to accept a change.
func TestOpenAPIGolden(t *testing.T) {
	body := servedDocument(t)
	golden := filepath.Join("testdata", "openapi.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(body, want) {
		t.Errorf("served /openapi.json differs from %s; run go test ./internal/rest/gateway -run TestOpenAPIGolden -update and review the diff", golden)
	}
}

// TestDocumentMatchesServed checks Document is what the server serves.
func TestDocumentMatchesServed(t *testing.T) {
	ts := newServer(t, nil)
	doc, err := gateway.Document(ts.Registry())
	if err != nil {
		t.Fatal(err)
	}
	if served := do(t, request{URL: ts.HTTP + "/openapi.json"}); !bytes.Equal(served.Body, doc) {
		t.Error("Document() differs from the served /openapi.json")
	}
}
