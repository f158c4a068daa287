package kb

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Seeds live in testdata/fuzz/FuzzParse and testdata/fuzz/FuzzCheck; the
// f.Add calls below keep the most important ones next to the code.

func FuzzParse(f *testing.F) {
	f.Add([]byte(itemSource("a", "tags: [x]", "constraints: [{operator: must_not_use, target: dependency, pattern: 'x|y'}]")))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("---\nid: a\n"))
	f.Add([]byte("---\n&a [*a]\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := Parse("f.md", data)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) || le.Path != "f.md" || le.Reason == "" {
				t.Fatalf("error %#v is not a *LoadError with a reason", err)
			}
			if it != nil {
				t.Fatal("Parse returned both an item and an error")
			}
			return
		}
		if !idPattern.MatchString(it.ID) || it.Title == "" || len(it.Hash) != 64 || len(it.rules) != len(it.Constraints) {
			t.Fatalf("invalid item accepted: %+v", it)
		}
		for _, c := range it.Constraints {
			if severityRank(c.Severity) == 0 || len(c.Pattern) > MaxPatternLength {
				t.Fatalf("invalid constraint accepted: %+v", c)
			}
		}
		set, errs := NewSet([]*Item{it})
		if len(errs) != 0 || set.Len() != 1 {
			t.Fatalf("a parsed item does not survive NewSet: %v", errs)
		}
		again, _ := Parse("f.md", data)
		if again.Hash != it.Hash {
			t.Fatal("hash is not deterministic")
		}
		_, _ = set.Query(Query{Text: string(data), Statuses: validStatuses})
	})
}

func FuzzCheck(f *testing.F) {
	examples := loadExamples(f)
	f.Add("cmd/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"mysql://x\") }\n", "mysql2", `fmt\.\w+`)
	f.Add("web/a.ts", "import {\n a } from 'pino'\nrequire('x')", "pino", "")
	f.Add("app.yaml", "password: hunter2hunter2\n", "", "(?m)^$")
	f.Add(`..\..\x.py`, "from . import x\nimport a as b, c\n", "lib/pq", "x*")
	f.Fuzz(func(t *testing.T, path, content, dep, pattern string) {
		if strings.TrimSpace(path) == "" {
			_, err := examples.Check(context.Background(), CheckInput{Files: []File{{Path: path}}})
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("empty path: err = %v, want *InputError", err)
			}
			return
		}
		in := CheckInput{
			Files:        []File{{Path: path, Content: content}, {Path: path + ".go", Content: content}},
			Dependencies: []Dependency{{Name: dep}},
			MinSeverity:  SeverityInfo,
		}
		checkInvariants(t, examples, in)
		if pattern == "" {
			return
		}
		var items []*Item
		for _, target := range validTargets {
			for _, op := range validOperators {
				c := Constraint{Operator: op, Target: target, Pattern: pattern}
				if target != TargetDependency {
					c.AppliesTo = []string{"**"}
				}
				items = append(items, &Item{
					ID: strings.ReplaceAll(target+"-"+op, "_", "-"), Type: TypeSpec, Layer: LayerProject,
					Title: "fuzz", Status: StatusAccepted, Severity: SeverityBlock, Constraints: []Constraint{c},
				})
			}
		}
		set, _ := NewSet(items) // an invalid pattern or glob is a LoadError, never a panic
		checkInvariants(t, set, in)
	})
}

func checkInvariants(t *testing.T, set *Set, in CheckInput) {
	t.Helper()
	res, err := set.Check(context.Background(), in)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if len(res.Violations) > MaxViolations {
		t.Fatalf("%d violations listed, more than the cap", len(res.Violations))
	}
	if s := res.Summary; s.Info+s.Warn+s.Block != len(res.Violations) {
		t.Fatalf("summary %+v does not count %d violations", s, len(res.Violations))
	}
	for _, v := range res.Violations {
		if v.Line < 0 || (v.Line > 0 && v.File == "") || v.Message == "" {
			t.Fatalf("malformed violation %+v", v)
		}
		if v.Severity == SeverityBlock && res.Passed {
			t.Fatal("passed with a block violation")
		}
	}
	again, _ := set.Check(context.Background(), in)
	if !reflect.DeepEqual(res, again) {
		t.Fatal("Check is not deterministic")
	}
}
