package e2e

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// filesystemServer is the path of the reference MCP filesystem server
// (@modelcontextprotocol/server-filesystem, version pinned in
// test/mcp/package.json), installed with test/mcp's locked packages.
func filesystemServer(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the npm MCP filesystem server; skipped in -short mode")
	}
	testenv.LookPath(t, "node")
	dir := filepath.Join(testenv.RepoRoot(t), "test", "mcp")
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	npmOnce.Do(func() {
		if _, err := os.Stat(entry); err == nil {
			return
		}
		testenv.LookPath(t, "npm")
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			npmErr = string(out) + err.Error()
		}
	})
	if npmErr != "" {
		t.Fatalf("npm ci in test/mcp: %s", npmErr)
	}
	return entry
}

var (
	npmOnce sync.Once
	npmErr  string
)

// filesystemUpstreams is examples/upstreams/filesystem.yaml as
// docs/ADDING-A-TOOL.md shows it, with the command pointed at the
// installed server and root, plus extra entries.
func filesystemUpstreams(t *testing.T, root, extra string) string {
	t.Helper()
	example, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "examples", "upstreams", "filesystem.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmdRE := regexp.MustCompile(`(?m)^      command: .*$`)
	if !cmdRE.Match(example) {
		t.Fatal("examples/upstreams/filesystem.yaml no longer has its command line")
	}
	body := cmdRE.ReplaceAllLiteralString(string(example), "      command: [node, "+filesystemServer(t)+", "+root+"]")
	file := filepath.Join(t.TempDir(), "upstreams.yaml")
	if err := os.WriteFile(file, []byte(body+"\n"+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestFilesystemServerServedWhole serves the real MCP filesystem server
// with examples/upstreams/filesystem.yaml: all 14 of its tools listed under
// their mapped names and callable on gRPC, REST and MCP, their results
// checked against the overlays' output schemas, arguments they do not
// name refused before the call; a result that breaks an operator's output
// schema is refused as any contract's.
func TestFilesystemServerServedWhole(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n0000")
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "logo.png"), png, 0o600); err != nil {
		t.Fatal(err)
	}
	// A second entry of the same server: a namespace keeps its names apart,
	// and its one overlay's output schema asks for a field the server
	// never returns.
	strict := `  - name: fs-strict
    mcp:
      command: [node, ` + filesystemServer(t) + `, ` + root + `]
    allow_claims: [read_only]
    naming: {kebab_case: true, namespace: strict}
    close_input_schemas: true
    overlays:
      get_file_info:
        parameters: {path: Path of the file.}
        examples: [{description: The notes., params_json: '{"path": "/x"}', expected_result_json: '{}'}]
        output_schema:
          type: object
          properties:
            size: {type: integer, description: Bytes.}
          required: [size]
          additionalProperties: false
`
	s, c := newUpstreamServer(t, filesystemUpstreams(t, root, strict))

	want := []string{"create-directory", "edit-file", "get-directory-tree", "get-file-info", "list-allowed-directories",
		"list-directory", "list-directory-with-sizes", "move-file", "read-file", "read-media-file", "read-multiple-files",
		"read-text-file", "search-files", "write-file"}
	var fs map[string]any
	for _, u := range healthz(t, s)["upstreams"].([]any) {
		if h := u.(map[string]any); h["name"] == "fs" {
			fs = h
		}
	}
	var served []string
	for _, x := range fs["tools_served"].([]any) {
		served = append(served, strings.TrimSuffix(x.(string), "@1.0.0"))
	}
	slices.Sort(served)
	if !slices.Equal(served, want) || len(fs["tools_refused"].([]any)) != 0 {
		t.Fatalf("fs serves %v, refuses %v; want all 14: %v", served, fs["tools_refused"], want)
	}
	serving := fs["serving"].(map[string]any)
	if serving["names"].(map[string]any)["directory_tree"] != "get-directory-tree" || serving["verbs"].(map[string]any)["read"] == nil ||
		serving["definitions"] != "pin" {
		t.Fatalf("operator view's serving = %v", serving)
	}
	// The overlay's output schema is the contract agents see.
	tool, err := s.Registry().Get("read-text-file", "")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(tool.OutputSchema)
	if !strings.Contains(string(out), "The tool's answer as text.") {
		t.Fatalf("read-text-file's output schema is not the overlay's: %s", out)
	}

	for _, tr := range transportsOf(s) {
		dir := filepath.Join(root, strings.ToLower(tr.Name()))
		calls := []struct {
			tool string
			args map[string]any
			want string // in data.content
		}{
			{"list-allowed-directories", map[string]any{}, root},
			{"create-directory", map[string]any{"path": dir}, "Successfully created"},
			{"write-file", map[string]any{"path": filepath.Join(dir, "a.txt"), "content": "alpha beta"}, "Successfully wrote"},
			{"edit-file", map[string]any{"path": filepath.Join(dir, "a.txt"), "edits": []any{map[string]any{"oldText": "beta", "newText": "gamma"}}}, "+alpha gamma"},
			{"read-text-file", map[string]any{"path": filepath.Join(dir, "a.txt")}, "alpha gamma"},
			{"read-file", map[string]any{"path": filepath.Join(root, "notes.txt"), "head": 1}, "one"},
			{"read-multiple-files", map[string]any{"paths": []any{filepath.Join(root, "notes.txt"), filepath.Join(dir, "a.txt")}}, "alpha gamma"},
			{"move-file", map[string]any{"source": filepath.Join(dir, "a.txt"), "destination": filepath.Join(dir, "b.txt")}, "Successfully moved"},
			{"list-directory", map[string]any{"path": dir}, "[FILE] b.txt"},
			{"list-directory-with-sizes", map[string]any{"path": dir, "sortBy": "size"}, "b.txt"},
			{"get-directory-tree", map[string]any{"path": dir}, `"b.txt"`},
			{"search-files", map[string]any{"path": root, "pattern": "**/b.txt"}, "b.txt"},
			{"get-file-info", map[string]any{"path": filepath.Join(dir, "b.txt")}, "size: 11"},
		}
		for _, k := range calls {
			o := call(t, tr, c.Full, k.tool, k.args)
			if o.Code != "OK" {
				t.Fatalf("%s %s: %s %v", tr.Name(), k.tool, o.Code, o.Error)
			}
			content, _ := o.Result["data"].(map[string]any)["content"].(string)
			if !strings.Contains(content, k.want) {
				t.Fatalf("%s %s: content %q, want it to contain %q", tr.Name(), k.tool, content, k.want)
			}
		}
		o := call(t, tr, c.Full, "read-media-file", map[string]any{"path": filepath.Join(root, "logo.png")})
		if o.Code != "OK" {
			t.Fatalf("%s read-media-file: %s %v", tr.Name(), o.Code, o.Error)
		}
		item := o.Result["data"].(map[string]any)["content"].([]any)[0].(map[string]any)
		if item["type"] != "image" || item["mimeType"] != "image/png" || item["data"] != base64.StdEncoding.EncodeToString(png) {
			t.Fatalf("%s read-media-file: %v", tr.Name(), item)
		}
		// The closed inputSchema refuses what the tool does not name,
		// before the call.
		o = call(t, tr, c.Full, "read-text-file", map[string]any{"path": filepath.Join(root, "notes.txt"), "encoding": "latin1"})
		if o.Code != "INVALID_INPUT" || !strings.Contains(strings.ToLower(jsonText(o.Error)), "encoding") {
			t.Fatalf("%s read-text-file with an unnamed argument: %s %v", tr.Name(), o.Code, o.Error)
		}
		// The operator's output schema is held as any contract: a result
		// without its required field is refused.
		o = call(t, tr, c.Full, "get-strict-file-info", map[string]any{"path": filepath.Join(root, "notes.txt")})
		if o.Code != "PROVIDER_ERROR" || !strings.Contains(jsonText(o.Error), "outputSchema") {
			t.Fatalf("%s get-strict-file-info: %s %v, want PROVIDER_ERROR for a result breaking the overlay's outputSchema", tr.Name(), o.Code, o.Error)
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
