package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// docCommand is one logical line of a document (continuations joined).
type docCommand struct {
	where string // file:line
	text  string
}

// docLines returns the logical lines of README.md and docs/*.md: lines
// ending in a backslash are joined with the next.
func docLines(t *testing.T) []docCommand {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join("..", "..", "README.md")}, files...)
	var out []docCommand
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			start, text := i, lines[i]
			for strings.HasSuffix(strings.TrimRight(text, " "), "\\") && i+1 < len(lines) {
				i++
				text = strings.TrimSuffix(strings.TrimRight(text, " "), "\\") + " " + strings.TrimSpace(lines[i])
			}
			out = append(out, docCommand{where: filepath.Base(f) + ":" + itoa(start+1), text: text})
		}
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// commandFlags returns the flags `toolsvc <sub> -h` lists.
func commandFlags(t *testing.T, sub string) map[string]bool {
	t.Helper()
	var out bytes.Buffer
	if code := run(context.Background(), []string{sub, "-h"}, nil, &out, &out); code != 0 {
		t.Fatalf("toolsvc %s -h: exit %d\n%s", sub, code, out.String())
	}
	flags := map[string]bool{"h": true, "help": true}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(out.String(), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 3 {
		t.Fatalf("toolsvc %s -h listed no flags:\n%s", sub, out.String())
	}
	return flags
}

// foreignFlags are flags the docs pass after a toolsvc command that belong
// to the program running it, by line: the MCP inspector's --method.
var foreignFlags = map[string]bool{"method": true}

// TestDocsCommandsMatchTheBinary checks every toolsvc command in README.md
// and docs/*.md against the binary: each flag exists in that subcommand's
// flag set; every curl that sends a body says it is JSON (the REST routes
// answer 415 otherwise); and every route a curl names is served by the
// HTTP handler (a request to it is not a 404 of the mux or the gateway,
// nor a 405).
func TestDocsCommandsMatchTheBinary(t *testing.T) {
	lines := docLines(t)
	flagSets := map[string]map[string]bool{}
	cmdRe := regexp.MustCompile(`(?:^|[\s(` + "`" + `/])(?:toolsvc|\./cmd/toolsvc) (serve|mcp|lint|reembed|tools|probe)((?:\s[^` + "`" + `|#)]*)?)(?:$|[` + "`" + `|#)])`)
	checked := 0
	for _, l := range lines {
		for _, m := range cmdRe.FindAllStringSubmatch(l.text, -1) {
			sub := m[1]
			if flagSets[sub] == nil {
				flagSets[sub] = commandFlags(t, sub)
			}
			for _, tok := range strings.Fields(m[2]) {
				if !strings.HasPrefix(tok, "-") || tok == "-" || tok == "--" {
					continue
				}
				name, _, _ := strings.Cut(strings.TrimLeft(tok, "-"), "=")
				name = strings.TrimRight(name, ".,;:")
				if name == "" || foreignFlags[name] {
					continue
				}
				checked++
				if !flagSets[sub][name] {
					t.Errorf("%s: `toolsvc %s` has no flag -%s: %s", l.where, sub, name, strings.TrimSpace(l.text))
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d flags of documented commands: the parser lost them", checked)
	}

	srv := testserver.New(t, testserver.Options{})
	client := &http.Client{}
	urlRe := regexp.MustCompile(`(?:\$TOOLSVC|https?://[a-z0-9.:-]+|localhost:\d+)(/[^\s"']*)`)
	curls := 0
	curlRe := regexp.MustCompile("(?:^|[\\s`(])curl\\s")
	for _, l := range lines {
		loc := curlRe.FindStringIndex(l.text)
		if loc == nil {
			continue
		}
		c := l.text[loc[0]:]
		curls++
		hasBody := regexp.MustCompile(`\s(-d|--data|--data-raw|--json)\s`).MatchString(c)
		if hasBody && !strings.Contains(strings.ToLower(c), "content-type: application/json") && !strings.Contains(c, "--json") {
			t.Errorf("%s: curl sends a body without a JSON content type (415): %s", l.where, strings.TrimSpace(c))
		}
		u := urlRe.FindStringSubmatch(c)
		if u == nil {
			t.Errorf("%s: curl names no URL of the service: %s", l.where, c)
			continue
		}
		path, _, _ := strings.Cut(u[1], "?")
		method := http.MethodGet
		if m := regexp.MustCompile(`-X\s+([A-Z]+)`).FindStringSubmatch(c); m != nil {
			method = m[1]
		} else if hasBody {
			method = http.MethodPost
		}
		req, err := http.NewRequest(method, srv.HTTP+path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %s %s: %v", l.where, method, path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		// A miss of the mux is its plain "404 page not found"; a miss of the
		// REST gateway is an error envelope saying "no route for". A tool
		// that does not exist here (an upstream's) is a route all the same.
		if (resp.StatusCode == http.StatusNotFound && (strings.HasPrefix(string(body), "404 page not found") || strings.Contains(string(body), "no route for"))) ||
			resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented {
			t.Errorf("%s: %s %s is not a route of the service (%d %s)", l.where, method, path, resp.StatusCode, strings.TrimSpace(string(body)))
		}
	}
	if curls < 10 {
		t.Fatalf("checked %d curl commands: the parser lost them", curls)
	}
}

// TestOperationsKnowledgeConfigMapCommand runs what docs/OPERATIONS.md's
// `kubectl create configmap toolsvc-knowledge ...` would put in the
// ConfigMap (the files its $(find ...) names, one key per file, as the
// chart mounts them: one flat directory) and loads that directory as the
// pod would, with one tenant: every item loads, none is refused (the old
// --from-file=examples/knowledge/ took no file at all, the items being in
// sub-directories).
func TestOperationsKnowledgeConfigMapCommand(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "OPERATIONS.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`kubectl create configmap toolsvc-knowledge \$\((find [^)]*)\)`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/OPERATIONS.md has no `kubectl create configmap toolsvc-knowledge $(find ...)` command")
	}
	cmd := exec.Command("bash", "-c", string(m[1]))
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", m[1], err)
	}
	mount := t.TempDir()
	files := 0
	for _, arg := range strings.Fields(string(out)) {
		path, ok := strings.CutPrefix(arg, "--from-file=")
		if !ok {
			t.Fatalf("the find prints %q, not a --from-file= argument", arg)
		}
		b, err := os.ReadFile(filepath.Join("..", "..", path))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mount, filepath.Base(path)), b, 0o600); err != nil {
			t.Fatal(err)
		}
		files++
	}
	if files < 3 {
		t.Fatalf("the command puts %d files in the ConfigMap", files)
	}
	lib, loadErrs, err := kb.LoadLibrary(mount, kb.LibraryOptions{Tenants: []string{"acme"}})
	if err != nil || len(loadErrs) > 0 {
		t.Fatalf("the ConfigMap's directory does not load: %v %v", err, loadErrs)
	}
	if n := lib.For("acme").Len(); n != files {
		t.Errorf("%d items served to acme of the %d files in the ConfigMap", n, files)
	}
}

// TestMakeHelpReadsAsWritten: `make help` prints each target's comment as a
// person reads it, with no Make escape left in (`$$(go env GOPATH)`).
func TestMakeHelpReadsAsWritten(t *testing.T) {
	out, err := exec.Command("make", "-C", filepath.Join("..", ".."), "--no-print-directory", "help").CombinedOutput()
	if err != nil {
		t.Skipf("make help: %v", err)
	}
	if strings.Contains(string(out), "$$") || !strings.Contains(string(out), "install") {
		t.Errorf("make help:\n%s", out)
	}
}
