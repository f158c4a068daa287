package kb

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseAllFields(t *testing.T) {
	src := "\ufeff---\n" + `id: adr-100.db_choice
type: adr
layer: org
title: "  Pick a database  "
summary: One engine for everything
status: accepted
severity: block
tags: [database, infra]
supersedes: adr-001
author: alice
created: 2025-01-02
updated: 2025-02-03T04:05:06Z
deciders: [alice, bob]
review:
  every: 6 months
  owners: {1: first}
constraints:
  - operator: must_not_use
    target: dependency
    pattern: mysql
    message: No MySQL.
  - operator: must_not_match
    target: code
    pattern: ' fmt\.Println'
    appliesTo: "**/*.go"
    severity: info
---

# Title

Body text.
`
	it, err := Parse("adrs/adr-100.md", []byte(strings.ReplaceAll(src, "\n", "\r\n")))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := &Item{
		ID: "adr-100.db_choice", Type: "adr", Layer: "org", Title: "Pick a database",
		Summary: "One engine for everything", Status: "accepted", Severity: "block",
		Supersedes: "adr-001", Author: "alice", Tags: []string{"database", "infra"},
		Constraints: []Constraint{
			{Operator: "must_not_use", Target: "dependency", Pattern: "mysql", Severity: "block", Message: "No MySQL."},
			{Operator: "must_not_match", Target: "code", Pattern: ` fmt\.Println`, AppliesTo: []string{"**/*.go"}, Severity: "info"},
		},
		Content: "# Title\n\nBody text.",
		Metadata: map[string]any{
			"deciders": []any{"alice", "bob"},
			"review":   map[string]any{"every": "6 months", "owners": map[string]any{"1": "first"}},
		},
		Path:      "adrs/adr-100.md",
		CreatedAt: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC),
	}
	got := *it
	got.Hash, got.rules = "", nil
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("Parse mismatch\n got: %+v\nwant: %+v", &got, want)
	}
	if len(it.Hash) != 64 || strings.Trim(it.Hash, "0123456789abcdef") != "" {
		t.Errorf("Hash = %q, want 64 hex digits", it.Hash)
	}
	if len(it.rules) != 2 || it.rules[0].re == nil || it.rules[1].re == nil {
		t.Errorf("constraints not compiled: %+v", it.rules)
	}
}

func TestParseDefaults(t *testing.T) {
	it := mustParse(t, "a.md", itemSource("a", "constraints:", "  - {operator: must_exist, target: file, pattern: README.md}"))
	if it.Severity != SeverityWarn {
		t.Errorf("item Severity = %q, want warn", it.Severity)
	}
	if got := it.Constraints[0].Severity; got != SeverityWarn {
		t.Errorf("constraint Severity = %q, want the item default warn", got)
	}
	if !it.CreatedAt.IsZero() || !it.UpdatedAt.IsZero() || it.Metadata != nil {
		t.Errorf("unset dates/metadata should stay zero: %v %v %v", it.CreatedAt, it.UpdatedAt, it.Metadata)
	}
	if it.rules[0].glob != "README.md" {
		t.Errorf("file constraint glob = %q", it.rules[0].glob)
	}
}

func TestParseHash(t *testing.T) {
	base := mustParse(t, "a.md", itemSource("a", "tags: [x, y]")).Hash
	tests := []struct {
		name string
		src  string
		same bool
	}{
		{name: "identical", src: itemSource("a", "tags: [x, y]"), same: true},
		{name: "tag order ignored", src: itemSource("a", "tags: [y, x]"), same: true},
		{name: "author ignored", src: itemSource("a", "tags: [x, y]", "author: bob"), same: true},
		{name: "path ignored", src: itemSource("a", "tags: [x, y]", "extra: 1"), same: true},
		{name: "tag changed", src: itemSource("a", "tags: [x, z]")},
		{name: "summary changed", src: itemSource("a", "tags: [x, y]", "summary: new")},
		{name: "severity changed", src: itemSource("a", "tags: [x, y]", "severity: block")},
		{name: "content changed", src: strings.Replace(itemSource("a", "tags: [x, y]"), "Body", "Text", 1)},
		{name: "constraint added", src: itemSource("a", "tags: [x, y]", "constraints: [{operator: must_use, target: dependency, pattern: x}]")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustParse(t, "b.md", tt.src).Hash
			if (got == base) != tt.same {
				t.Errorf("hash equal = %v, want %v", got == base, tt.same)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("a", MaxPatternLength+1)
	tests := []struct {
		name   string
		src    string
		reason string // substring of LoadError.Reason
	}{
		{name: "empty file", src: "", reason: `front matter: missing: the file must start with a "---" line`},
		{name: "no front matter", src: "# Just markdown\n", reason: `front matter: missing`},
		{name: "unclosed front matter", src: "---\nid: a\n", reason: `front matter: no closing "---" line`},
		{name: "bad yaml", src: "---\nid: a\ntitle: [unclosed\n---\n", reason: "front matter: yaml: line"},
		{name: "yaml tab indentation", src: "---\nid: a\n\ttitle: x\n---\n", reason: "front matter: yaml:"},
		{name: "front matter is a list", src: "---\n- a\n- b\n---\n", reason: "front matter: must be a YAML mapping"},
		{name: "duplicate key", src: "---\nid: a\nid: b\n---\n", reason: `front matter: line 3: duplicate key "id"`},
		{name: "duplicate constraint key", src: itemSource("a", "constraints: [{operator: must_use, target: dependency, pattern: x, pattern: y}]"), reason: `constraint 1: line 7: duplicate key "pattern"`},
		{name: "missing id", src: "---\ntitle: x\nstatus: accepted\n---\n", reason: `missing required field "id"`},
		{name: "empty front matter", src: "---\n---\nbody", reason: `missing required field "id"`},
		{name: "invalid id", src: "---\nid: Bad ID\ntitle: x\nstatus: accepted\n---\n", reason: `invalid id "Bad ID"`},
		{name: "id too long", src: "---\nid: " + strings.Repeat("a", 129) + "\ntitle: x\nstatus: accepted\n---\n", reason: "invalid id"},
		{name: "missing title", src: "---\nid: a\nstatus: accepted\ntype: adr\nlayer: org\n---\n", reason: `missing required field "title"`},
		{name: "missing status", src: "---\nid: a\ntitle: x\ntype: adr\nlayer: org\n---\n", reason: `missing required field "status"`},
		{name: "missing type", src: "---\nid: a\ntitle: x\nstatus: accepted\nlayer: org\n---\n", reason: `missing required field "type"`},
		{name: "unknown type", src: itemSource("a", "type: memo"), reason: `unknown type "memo"`},
		{name: "unknown layer", src: itemSource("a", "layer: galaxy"), reason: `unknown layer "galaxy"`},
		{name: "unknown status", src: itemSource("a", "status: approved"), reason: `unknown status "approved"`},
		{name: "unknown item severity", src: itemSource("a", "severity: fatal"), reason: `unknown severity "fatal"`},
		{name: "title not a string", src: itemSource("a", "title: [x]"), reason: `"title" must be a string`},
		{name: "tags not strings", src: itemSource("a", "tags: [[x]]"), reason: `"tags" must be a list of strings`},
		{name: "empty tag", src: itemSource("a", "tags: ['x', '']"), reason: "tag 2 is empty"},
		{name: "bad date", src: itemSource("a", "created: last tuesday"), reason: `"created": invalid date "last tuesday"`},
		{name: "self supersede", src: itemSource("a", "supersedes: a"), reason: "cannot supersede itself"},
		{name: "bad supersedes", src: itemSource("a", "supersedes: Not An Id"), reason: `invalid supersedes "Not An Id"`},
		{name: "constraints not a list", src: itemSource("a", "constraints: {operator: must_use}"), reason: `"constraints" must be a list`},
		{name: "constraint not a mapping", src: itemSource("a", "constraints: [x]"), reason: "constraint 1: must be a mapping"},
		{name: "unknown constraint field", src: itemSource("a", "constraints:", "  - {operator: must_use, target: dependency, pattern: x, aplliesTo: y}"), reason: `constraint 1: unknown field "aplliesTo"`},
		{name: "unknown operator", src: itemSource("a", "constraints:", "  - {operator: must_use, target: dependency, pattern: x}", "  - {operator: must_be, target: dependency, pattern: x}"), reason: `constraint 2: unknown operator "must_be"`},
		{name: "missing operator", src: itemSource("a", "constraints: [{target: dependency, pattern: x}]"), reason: "constraint 1: missing operator"},
		{name: "unknown target", src: itemSource("a", "constraints: [{operator: must_use, target: database, pattern: x}]"), reason: `constraint 1: unknown target "database"`},
		{name: "missing target", src: itemSource("a", "constraints: [{operator: must_use, pattern: x}]"), reason: "constraint 1: missing target"},
		{name: "unknown constraint severity", src: itemSource("a", "constraints: [{operator: must_use, target: dependency, pattern: x, severity: error}]"), reason: `constraint 1: unknown severity "error"`},
		{name: "missing pattern", src: itemSource("a", "constraints: [{operator: must_use, target: dependency}]"), reason: "constraint 1: missing pattern"},
		{name: "invalid regex", src: itemSource("a", "constraints: [{operator: must_use, target: dependency, pattern: '('}]"), reason: `constraint 1: invalid regex "(": missing closing )`},
		{name: "regex valid only when wrapped", src: itemSource("a", "constraints: [{operator: must_use, target: import, pattern: 'a)|(b'}]"), reason: `constraint 1: invalid regex "a)|(b"`},
		{name: "invalid code regex", src: itemSource("a", "constraints: [{operator: must_not_match, target: code, pattern: 'x{2,1}'}]"), reason: `constraint 1: invalid regex "x{2,1}": invalid repeat count`},
		{name: "invalid glob", src: itemSource("a", "constraints: [{operator: must_exist, target: file, pattern: 'src/[a'}]"), reason: `constraint 1: pattern: invalid glob "src/[a"`},
		{name: "invalid appliesTo glob", src: itemSource("a", "constraints: [{operator: must_not_match, target: code, pattern: x, appliesTo: ['{a,b']}]"), reason: `constraint 1: appliesTo: invalid glob "{a,b"`},
		{name: "appliesTo on dependency", src: itemSource("a", "constraints: [{operator: must_use, target: dependency, pattern: x, appliesTo: ['**']}]"), reason: `constraint 1: appliesTo has no effect on target "dependency"`},
		{name: "over-long pattern", src: itemSource("a", "constraints: [{operator: must_not_match, target: code, pattern: "+long+"}]"), reason: "constraint 1: pattern is 1025 bytes long; the limit is 1024"},
		{name: "over-long glob", src: itemSource("a", "constraints: [{operator: must_not_match, target: code, pattern: x, appliesTo: ["+long+"]}]"), reason: "constraint 1: appliesTo: glob is 1025 bytes long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, err := Parse("dir/f.md", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want error containing %q", it, tt.reason)
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %T %v is not a *LoadError", err, err)
			}
			if le.Path != "dir/f.md" {
				t.Errorf("Path = %q, want dir/f.md", le.Path)
			}
			if !strings.Contains(le.Reason, tt.reason) {
				t.Errorf("Reason = %q, want it to contain %q", le.Reason, tt.reason)
			}
			if got, want := le.Error(), "dir/f.md: "+le.Reason; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}
}
