package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	hintspkg "github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// rangeItems is how many knowledge items and rangeMemories how many memories
// the range test fills a tenant with: more than any documented limit (100)
// answers in one page, and more than the hints may list (50) on the second.
const (
	rangeItems    = 120
	rangeMemories = 170
)

// rangeCase calls one tool at the top of the ranges it covers (the JSON
// paths of the bounded input fields, as the input schema names them) and
// checks the answer is whole.
type rangeCase struct {
	tool   string
	covers []string
	run    func(t *testing.T, tr Transport)
}

// TestTopOfEveryRange calls every built-in tool at the top of every
// documented range of its input (limits, lengths, counts) with data that
// fills it, on every transport and both stores, and requires a whole
// answer: the contract a tool publishes must hold at every valid input,
// or the result validator reports the tool's bug to the caller as a 500
// (search-memories and query-knowledge with limit 100 did).
// TestRangeCasesCoverEverySchemaBound keeps the table complete.
func TestTopOfEveryRange(t *testing.T) {
	backends := []string{testserver.SQLite, testserver.Postgres}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			if backend == testserver.Postgres {
				testserver.PostgresDSN(t) // skips with a reason when PostgreSQL is not configured
			}
			knowledge := rangeKnowledge(t)
			opts := testserver.Options{Backend: backend, Configure: func(c *server.Config) { c.KnowledgeDir = knowledge }}
			for _, tr := range transports(t, opts) {
				t.Run(tr.Name(), func(t *testing.T) {
					fillMemories(t, tr)
					for _, c := range rangeCases() {
						t.Run(c.tool, func(t *testing.T) { c.run(t, tr) })
					}
				})
			}
		})
	}
}

// TestRangeCasesCoverEverySchemaBound fails when a built-in tool's input
// schema has a bound (maximum, maxItems, maxLength) that no case of
// TestTopOfEveryRange fills: a new range gets its test with its field.
func TestRangeCasesCoverEverySchemaBound(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range rangeCases() {
		for _, p := range c.covers {
			covered[c.tool+" "+p] = true
		}
	}
	s := testserver.New(t, testserver.Options{})
	for _, tool := range s.Registry().All() {
		var bounds []string
		schemaBounds(tool.InputSchema, "", &bounds)
		for _, b := range bounds {
			if !covered[tool.Name+" "+b] {
				t.Errorf("%s@%s: the bound of %s is not filled by any case of TestTopOfEveryRange", tool.Name, tool.Version, b)
			}
		}
	}
}

// schemaBounds appends the paths (".limit", ".tags[]") of every property
// of a JSON Schema that has an upper bound.
func schemaBounds(s any, path string, out *[]string) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	for _, k := range []string{"maximum", "maxItems", "maxLength", "exclusiveMaximum", "maxProperties"} {
		if _, ok := m[k]; ok && path != "" {
			*out = append(*out, path)
			break
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, v := range props {
			schemaBounds(v, path+"."+k, out)
		}
	}
	if items, ok := m["items"]; ok {
		schemaBounds(items, path+"[]", out)
	}
	for _, k := range []string{"oneOf", "anyOf", "allOf"} {
		if xs, ok := m[k].([]any); ok {
			for _, x := range xs {
				schemaBounds(x, path, out)
			}
		}
	}
}

// rangeKnowledge writes a knowledge directory with rangeItems accepted
// policies published company-wide, each forbidding one dependency
// (bad-dep-NNN) and one file path, all found by the query "ranged".
func rangeKnowledge(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "knowledge")
	cw := filepath.Join(dir, "company-wide")
	if err := os.MkdirAll(cw, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range rangeItems {
		id := fmt.Sprintf("pol-%03d-ranged-rule", 500+i)
		doc := fmt.Sprintf(`---
id: %s
type: policy
layer: company
title: Ranged Rule %d
summary: Ranged rule number %d forbids one dependency and one file
status: accepted
severity: block
tags: [ranged, rules]
author: range-test
created: 2026-01-01
constraints:
  - operator: must_not_use
    target: dependency
    pattern: "bad-dep-%03d"
    message: bad-dep-%03d is forbidden by ranged rule %d.
  - operator: must_not_exist
    target: file
    pattern: "forbidden/f%03d.txt"
    message: forbidden/f%03d.txt is forbidden by ranged rule %d.
---

# Ranged rule %d

Ranged rules exist to fill every range of the knowledge tools.
`, id, i, i, i, i, i, i, i, i, i)
		if err := os.WriteFile(filepath.Join(cw, id+".md"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var rangeWords = strings.Fields(`amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon
	marble nectar onyx prism quartz raven sierra tundra umber violet willow xenon yarrow zephyr`)

// fillMemories adds rangeMemories distinct memories that the query
// "ranged ledger" finds, four calls at a time.
func fillMemories(t *testing.T, tr Transport) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, rangeMemories)
	sem := make(chan struct{}, 4)
	for i := range rangeMemories {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			n := len(rangeWords)
			content := fmt.Sprintf("ranged ledger %s %s %s entry %d", rangeWords[i%n], rangeWords[(i/n+5)%n], rangeWords[(i*7+3)%n], i)
			o := call(t, tr, "", "add-memory", map[string]any{"content": content, "layer": "company"})
			if o.Code != "OK" {
				errs <- fmt.Sprintf("add-memory %d: %s %v", i, o.Code, o.Error)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// rangeHeaders name an agent and a session, so that every layer can be searched.
var rangeHeaders = map[string]string{"x-agent-id": "range-agent", "x-session-id": "range-session"}

// ok calls a tool and requires success; it returns the result's data and hints.
func ok(t *testing.T, tr Transport, tool string, args map[string]any) (data, hints map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o, err := tr.Call(ctx, "", tool, args, rangeHeaders)
	if err != nil {
		t.Fatalf("%s %s: transport error: %v", tr.Name(), tool, err)
	}
	if o.Code != "OK" {
		t.Fatalf("%s %s at the top of its ranges: %s %v", tr.Name(), tool, o.Code, o.Error)
	}
	data, _ = o.Result["data"].(map[string]any)
	hints, _ = o.Result["agentHints"].(map[string]any)
	checkActions(t, hints)
	return data, hints
}

// checkActions: every suggested action is a built-in tool or one of the
// documented instructions that are not tools (hints.Instructions), never
// a name an agent would try to call in vain.
func checkActions(t *testing.T, h map[string]any) {
	t.Helper()
	for _, a := range list(h, "suggestedNextActions") {
		name, _ := a.(map[string]any)["action"].(string)
		if !slices.ContainsFunc(MatrixTools, func(m MatrixTool) bool { return m.Name == name }) && !hintspkg.IsInstruction(name) {
			t.Errorf("suggested action %q is neither a tool nor a documented instruction", name)
		}
	}
}

func list(m map[string]any, key string) []any { l, _ := m[key].([]any); return l }

func repeat(s string, n int) string { return strings.Repeat(s, n)[:n] }

// tags32 is 32 distinct tags of 64 characters.
func tags32() []any {
	out := make([]any, 32)
	for i := range out {
		out[i] = repeat(fmt.Sprintf("tag-%02d-", i), 64)
	}
	return out
}

var allLayers = []any{"agent", "user", "session", "project", "team", "org", "company"}

func rangeCases() []rangeCase {
	return []rangeCase{
		{tool: "add-memory", covers: []string{".content", ".tags", ".tags[]"}, run: func(t *testing.T, tr Transport) {
			content := repeat("A long note at the top of its length. ", 16384)
			data, _ := ok(t, tr, "add-memory", map[string]any{"content": content, "tags": tags32(), "layer": "project"})
			if data["memoryId"] == nil {
				t.Errorf("no memoryId: %v", data)
			}
		}},
		{tool: "search-memories", covers: []string{".limit", ".query", ".layers", ".tags", ".tags[]", ".threshold", ".cursor"}, run: func(t *testing.T, tr Transport) {
			data, hints := ok(t, tr, "search-memories", map[string]any{"query": "ranged ledger", "limit": 100, "threshold": 0, "layers": allLayers})
			if n := len(list(data, "results")); n != 100 {
				t.Fatalf("limit 100 over %d memories: %d results", rangeMemories, n)
			}
			if n := len(list(hints, "relatedResources")); n != 50 {
				t.Errorf("%d related resources, want the 50 the hints allow", n)
			}
			cursor, _ := data["nextCursor"].(string)
			if cursor == "" || len(cursor) > 512 {
				t.Fatalf("next cursor %q: want one within its 512 characters", cursor)
			}
			data, _ = ok(t, tr, "search-memories", map[string]any{"query": "ranged ledger", "limit": 80, "threshold": 0, "layers": allLayers, "cursor": cursor})
			if n := len(list(data, "results")); n != rangeMemories-100 {
				t.Errorf("second page with limit 80: %d results, want %d", n, rangeMemories-100)
			}
			// The longest query, the most tags and the top threshold: valid, so answered.
			ok(t, tr, "search-memories", map[string]any{"query": repeat("ranged ledger ", 1000), "tags": tags32(), "threshold": 1, "limit": 100})
		}},
		{tool: "summarize-memories", covers: []string{".maxBullets", ".query", ".layers", ".threshold"}, run: func(t *testing.T, tr Transport) {
			data, _ := ok(t, tr, "summarize-memories", map[string]any{"query": "ranged ledger", "maxBullets": 20, "threshold": 0, "layers": allLayers})
			if n := len(list(data, "bullets")); n != 20 {
				t.Errorf("maxBullets 20 over %d memories: %d bullets", rangeMemories, n)
			}
			ok(t, tr, "summarize-memories", map[string]any{"query": repeat("ranged ledger ", 1000), "threshold": 1})
		}},
		{tool: "delete-memory", run: func(t *testing.T, tr Transport) {
			data, _ := ok(t, tr, "add-memory", map[string]any{"content": "a ranged memory to delete", "layer": "company"})
			ok(t, tr, "delete-memory", map[string]any{"memoryId": data["memoryId"]})
		}},
		{tool: "query-knowledge", covers: []string{".limit", ".query", ".status", ".tags", ".tags[]", ".cursor"}, run: func(t *testing.T, tr Transport) {
			data, hints := ok(t, tr, "query-knowledge", map[string]any{"query": "ranged rule", "limit": 100})
			if n := len(list(data, "items")); n != 100 {
				t.Fatalf("limit 100 over %d items: %d items", rangeItems, n)
			}
			if n := len(list(hints, "relatedResources")); n > 50 {
				t.Errorf("%d related resources, more than the hints allow", n)
			}
			cursor, _ := data["nextCursor"].(string)
			if cursor == "" {
				t.Fatal("no next cursor after 100 of 120 items")
			}
			data, _ = ok(t, tr, "query-knowledge", map[string]any{"query": "ranged rule", "limit": 100, "cursor": cursor})
			if n := len(list(data, "items")); n < rangeItems-100 {
				t.Errorf("second page: %d items, want at least %d", n, rangeItems-100)
			}
			tags := tags32()
			tags[0] = "ranged"
			ok(t, tr, "query-knowledge", map[string]any{"query": repeat("ranged rule ", 1000), "limit": 100, "tags": tags,
				"status": []any{"proposed", "accepted", "deprecated", "superseded", "rejected", "draft"}})
		}},
		{tool: "show-knowledge", run: func(t *testing.T, tr Transport) {
			ok(t, tr, "show-knowledge", map[string]any{"id": "pol-500-ranged-rule", "includeHistory": true})
		}},
		{tool: "check-knowledge", covers: []string{".dependencies", ".dependencies[].name", ".dependencies[].version", ".files", ".files[].path", ".files[].content", ".knowledgeItemIds"}, run: func(t *testing.T, tr Transport) {
			deps := make([]any, 5000)
			for i := range deps {
				deps[i] = map[string]any{"name": fmt.Sprintf("bad-dep-%03d", i%rangeItems), "version": "1.0.0"}
			}
			deps[0] = map[string]any{"name": repeat("long-dependency-name/", 512), "version": repeat("1.2.3-", 128)}
			data, hints := ok(t, tr, "check-knowledge", map[string]any{"dependencies": deps, "minSeverity": "info"})
			if data["passed"] != false || len(list(data, "violations")) < 50 {
				t.Errorf("5000 dependencies breaking %d rules: passed %v, %d violations", rangeItems, data["passed"], len(list(data, "violations")))
			}
			if n := len(list(hints, "relatedResources")); n > 50 {
				t.Errorf("%d related resources, more than the hints allow", n)
			}
			files := make([]any, 500)
			for i := range files {
				files[i] = map[string]any{"path": fmt.Sprintf("forbidden/f%03d.txt", i%rangeItems), "content": "x"}
			}
			files[499] = map[string]any{"path": repeat("deep/", 1024), "content": repeat("package main // ranged\n", 1<<20)}
			ids := make([]any, 100)
			for i := range ids {
				ids[i] = fmt.Sprintf("pol-%03d-ranged-rule", 500+i)
			}
			data, _ = ok(t, tr, "check-knowledge", map[string]any{"files": files, "knowledgeItemIds": ids})
			if data["passed"] != false {
				t.Errorf("500 forbidden files passed: %v", data)
			}
			// Item ids alone: the hints suggest reading each item, more than they may list.
			ok(t, tr, "check-knowledge", map[string]any{"knowledgeItemIds": ids})
		}},
		{tool: "sync-knowledge", covers: []string{".layers", ".types"}, run: func(t *testing.T, tr Transport) {
			ok(t, tr, "sync-knowledge", map[string]any{"layers": []any{"company", "org", "team", "project"},
				"types": []any{"adr", "policy", "pattern", "spec"}})
		}},
		{tool: "get-sync-status", run: func(t *testing.T, tr Transport) {
			ok(t, tr, "get-sync-status", map[string]any{})
		}},
		{tool: "list-audit-events", covers: []string{".page.limit", ".page.offset", ".page.cursor", ".tool", ".subject"}, run: func(t *testing.T, tr Transport) {
			// Reads are audited shortly after their answer: wait for 100.
			deadline := time.Now().Add(20 * time.Second)
			for {
				data, _ := ok(t, tr, "list-audit-events", map[string]any{"page": map[string]any{"limit": 100}})
				if n := len(list(data, "events")); n == 100 {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("limit 100 after %d audited calls: %d events", rangeMemories, n)
				}
				time.Sleep(200 * time.Millisecond)
			}
			ok(t, tr, "list-audit-events", map[string]any{"page": map[string]any{"limit": 100, "offset": 100000},
				"tool": repeat("add-memory", 64), "subject": repeat("someone", 256)})
		}},
	}
}

// TestRangeCasesAreKnownTools keeps the table's tool names true.
func TestRangeCasesAreKnownTools(t *testing.T) {
	s := testserver.New(t, testserver.Options{})
	var names []string
	for _, tool := range s.Registry().All() {
		names = append(names, tool.Name)
	}
	var missing []string
	for _, c := range rangeCases() {
		if !slices.Contains(names, c.tool) {
			missing = append(missing, c.tool)
		}
	}
	seen := map[string]bool{}
	for _, c := range rangeCases() {
		seen[c.tool] = true
	}
	for _, n := range names {
		if !seen[n] {
			missing = append(missing, n+" (served, no case)")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("range cases and served tools disagree: %v", missing)
	}
}
