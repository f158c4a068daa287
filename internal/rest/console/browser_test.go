package console_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

var update = flag.Bool("update", false, "write the browser test's screenshots to docs/console.png and docs/console-phone.png")

// TestConsoleInBrowser drives /ui in headless Chromium against the real
// server over real HTTP (test/browser/console.test.mjs): a key with
// memory:* and knowledge:read runs add-memory, then search-memories for it,
// and sees the result and the hints; a phone-sized viewport has no
// horizontal scroll. With -update the screenshots go to docs/.
func TestConsoleInBrowser(t *testing.T) {
	node := requireTools(t, true)
	srv, key := serverWithKey(t)
	root := testenv.RepoRoot(t)
	dir := filepath.Join(root, "test", "browser")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("npm is needed to install test/browser's dependencies: %v", err)
		}
		run(t, 5*time.Minute, dir, nil, npm, "ci", "--no-audit", "--no-fund")
	}
	shot := filepath.Join(t.TempDir(), "console.png")
	if *update {
		if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
			t.Fatal(err)
		}
		shot = filepath.Join(root, "docs", "console.png")
	}
	out := run(t, 3*time.Minute, dir, nil, node, "console.test.mjs", srv.HTTP, key, shot)
	t.Log(out)
	for _, p := range []string{shot, strings.TrimSuffix(shot, ".png") + "-phone.png"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10<<10 {
			t.Errorf("%s is not a plausible PNG screenshot (%d bytes)", p, len(b))
		}
	}
}

// TestSchemaFormJS runs the form generator's unit tests with node --test,
// including the suite that builds a form from every real tool's input schema
// (as the registry serves it) and checks every keyword is handled and every
// example round-trips through the form.
func TestSchemaFormJS(t *testing.T) {
	node := requireTools(t, false)
	srv := testserver.New(t, testserver.Options{})
	var defs []json.RawMessage
	for _, tool := range srv.Registry().Latest() {
		b, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(tool.Def)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, b)
	}
	if len(defs) == 0 {
		t.Fatal("the registry has no tools")
	}
	data, err := json.Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(t.TempDir(), "tools.json")
	if err := os.WriteFile(tools, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out := run(t, 2*time.Minute, ".", []string{"TOOLSVC_TOOLS=" + tools}, node, "--test", "--test-reporter=tap", filepath.Join("jstest", "schemaform.test.mjs"))
	for _, want := range []string{"# fail 0", "# skipped 0", "# Subtest: real tool schemas", "# Subtest: add-memory"} {
		if !strings.Contains(out, want) {
			t.Errorf("node --test output lacks %q:\n%s", want, out)
		}
	}
}

// TestModulesParse checks every console module is valid ES module syntax, so
// a typo fails here and not only in a browser.
func TestModulesParse(t *testing.T) {
	node := requireTools(t, false)
	files, err := filepath.Glob(filepath.Join("static", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no modules found: %v", err)
	}
	tmp := t.TempDir()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			mjs := filepath.Join(tmp, strings.TrimSuffix(filepath.Base(f), ".js")+".mjs")
			if err := os.WriteFile(mjs, src, 0o600); err != nil {
				t.Fatal(err)
			}
			run(t, 30*time.Second, tmp, nil, node, "--check", mjs)
		})
	}
}
