package kb

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// matrixFiles exercise every file-based target; line numbers below refer to
// them.
var matrixFiles = []File{
	{Path: "cmd/app/main.go", Content: `package main

import (
	"fmt"
	"github.com/pkg/errors"
)

func main() {
	fmt.Println("hi")
	fmt.Println(errors.New("x"))
}
`},
	{Path: "web/app.ts", Content: "import pino from 'pino';\nconst x = require(\"lodash\");\nconsole.log(x);\n"},
	{Path: "config/app.yaml", Content: "db:\n  url: mysql://root@db/orders\n  password: hunter2hunter2\n"},
	{Path: `svc\worker.py`, Content: "import os, sys as system\nfrom requests import get\n"},
}

var matrixDeps = []Dependency{{Name: "pgx", Version: "5.7.0"}, {Name: "mysql2", Version: "3.0.0"}}

// loc is where a violation was reported.
type loc struct {
	Subject string
	File    string
	Line    int
}

func locations(vs []Violation) []loc {
	out := []loc{}
	for _, v := range vs {
		out = append(out, loc{Subject: v.Subject, File: v.File, Line: v.Line})
	}
	return out
}

// mustCheck runs Check and fails the test on error.
func mustCheck(tb testing.TB, set *Set, in CheckInput) CheckResult {
	tb.Helper()
	res, err := set.Check(context.Background(), in)
	if err != nil {
		tb.Fatalf("Check: %v", err)
	}
	return res
}

func TestCheckOperatorsAndTargets(t *testing.T) {
	const main, ts, yaml, py = "cmd/app/main.go", "web/app.ts", "config/app.yaml", `svc\worker.py`
	none := []loc{}
	missing := []loc{{}}
	tests := []struct {
		name      string
		op        string
		target    string
		pattern   string
		appliesTo []string
		want      []loc
	}{
		{name: "dependency must_use present", op: OpMustUse, target: TargetDependency, pattern: "pgx", want: none},
		{name: "dependency must_use absent", op: OpMustUse, target: TargetDependency, pattern: "redis", want: missing},
		{name: "dependency must_exist present", op: OpMustExist, target: TargetDependency, pattern: "mysql2", want: none},
		{name: "dependency must_exist absent", op: OpMustExist, target: TargetDependency, pattern: "gorm", want: missing},
		{name: "dependency must_not_use", op: OpMustNotUse, target: TargetDependency, pattern: "mysql2?", want: []loc{{Subject: "mysql2"}}},
		{name: "dependency match is whole-name", op: OpMustNotUse, target: TargetDependency, pattern: "mysql", want: none},
		{name: "dependency must_not_exist", op: OpMustNotExist, target: TargetDependency, pattern: "pgx", want: []loc{{Subject: "pgx"}}},
		{name: "dependency must_match all", op: OpMustMatch, target: TargetDependency, pattern: "[a-z0-9]+", want: none},
		{name: "dependency must_match some", op: OpMustMatch, target: TargetDependency, pattern: "pgx", want: []loc{{Subject: "mysql2"}}},
		{name: "dependency must_not_match", op: OpMustNotMatch, target: TargetDependency, pattern: ".*", want: []loc{{Subject: "mysql2"}, {Subject: "pgx"}}},

		{name: "file must_use present", op: OpMustUse, target: TargetFile, pattern: "**/*.ts", want: none},
		{name: "file must_exist absent", op: OpMustExist, target: TargetFile, pattern: "**/README.md", want: missing},
		{name: "file must_not_use", op: OpMustNotUse, target: TargetFile, pattern: "**/*.py", want: []loc{{py, py, 0}}},
		{name: "file must_not_exist", op: OpMustNotExist, target: TargetFile, pattern: "config/**", want: []loc{{yaml, yaml, 0}}},
		{name: "file must_match all", op: OpMustMatch, target: TargetFile, pattern: "**/*.{go,ts,yaml,py}", want: none},
		{name: "file must_match some", op: OpMustMatch, target: TargetFile, pattern: "**/*.go", want: []loc{{yaml, yaml, 0}, {py, py, 0}, {ts, ts, 0}}},
		{name: "file must_not_match", op: OpMustNotMatch, target: TargetFile, pattern: "cmd/**", want: []loc{{main, main, 0}}},
		{name: "file appliesTo", op: OpMustNotMatch, target: TargetFile, pattern: "**", appliesTo: []string{"web/**"}, want: []loc{{ts, ts, 0}}},

		{name: "code must_use absent", op: OpMustUse, target: TargetCode, pattern: `slog\.`, want: missing},
		{name: "code must_exist present", op: OpMustExist, target: TargetCode, pattern: "pino", want: none},
		{name: "code must_not_use", op: OpMustNotUse, target: TargetCode, pattern: `fmt\.Println`, appliesTo: []string{"**/*.go"}, want: []loc{{"fmt.Println", main, 9}, {"fmt.Println", main, 10}}},
		{name: "code must_not_exist", op: OpMustNotExist, target: TargetCode, pattern: `console\.log`, want: []loc{{"console.log", ts, 3}}},
		{name: "code must_match all", op: OpMustMatch, target: TargetCode, pattern: "package main", appliesTo: []string{"**/*.go"}, want: none},
		{name: "code must_match some", op: OpMustMatch, target: TargetCode, pattern: "import", want: []loc{{yaml, yaml, 0}}},
		{name: "code must_not_match", op: OpMustNotMatch, target: TargetCode, pattern: "mysql://", want: []loc{{"mysql://", yaml, 2}}},
		{name: "code appliesTo excludes", op: OpMustNotMatch, target: TargetCode, pattern: "mysql://", appliesTo: []string{"**/*.{go,ts,js,py}"}, want: none},
		{name: "code multi-line match", op: OpMustNotMatch, target: TargetCode, pattern: `(?s)main\(\) \{.*?hi`, want: []loc{{"main() {\n\tfmt.Println(\"hi", main, 8}}},

		{name: "import must_use present", op: OpMustUse, target: TargetImport, pattern: "fmt", want: none},
		{name: "import must_exist absent", op: OpMustExist, target: TargetImport, pattern: "log/slog", want: missing},
		{name: "import must_not_use", op: OpMustNotUse, target: TargetImport, pattern: `github\.com/pkg/errors`, want: []loc{{"github.com/pkg/errors", main, 5}}},
		{name: "import must_not_exist", op: OpMustNotExist, target: TargetImport, pattern: "lodash", want: []loc{{"lodash", ts, 2}}},
		{name: "import must_match", op: OpMustMatch, target: TargetImport, pattern: "[a-z]+", want: []loc{{"github.com/pkg/errors", main, 5}}},
		{name: "import must_not_match", op: OpMustNotMatch, target: TargetImport, pattern: "os|sys|requests", want: []loc{{"os", py, 1}, {"sys", py, 1}, {"requests", py, 2}}},
		{name: "import whole-path match", op: OpMustNotMatch, target: TargetImport, pattern: "errors", want: none},

		{name: "config must_use present", op: OpMustUse, target: TargetConfig, pattern: "url:", want: none},
		{name: "config must_exist absent", op: OpMustExist, target: TargetConfig, pattern: "tls:", want: missing},
		{name: "config must_not_use", op: OpMustNotUse, target: TargetConfig, pattern: `password:\s*\S+`, want: []loc{{"password: hunter2hunter2", yaml, 3}}},
		{name: "config must_not_exist", op: OpMustNotExist, target: TargetConfig, pattern: "mysql://", want: []loc{{"mysql://", yaml, 2}}},
		{name: "config must_match all", op: OpMustMatch, target: TargetConfig, pattern: "(?m)^db:", want: none},
		{name: "config must_match some", op: OpMustMatch, target: TargetConfig, pattern: "redis", want: []loc{{yaml, yaml, 0}}},
		{name: "config must_not_match", op: OpMustNotMatch, target: TargetConfig, pattern: "hunter2", want: []loc{{"hunter2", yaml, 3}, {"hunter2", yaml, 3}}},
		{name: "config appliesTo widens scope", op: OpMustNotMatch, target: TargetConfig, pattern: "pino", appliesTo: []string{"**/*.ts"}, want: []loc{{"pino", ts, 1}, {"pino", ts, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := constraintItem(t, "rule", tt.op, tt.target, tt.pattern, tt.appliesTo...)
			set := mustSet(t, it)
			res := mustCheck(t, set, CheckInput{Files: matrixFiles, Dependencies: matrixDeps, MinSeverity: SeverityInfo})
			if got := locations(res.Violations); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("violations at %+v, want %+v", got, tt.want)
			}
			for _, v := range res.Violations {
				if v.ItemID != "rule" || v.ItemTitle != "Item rule" || v.Severity != SeverityWarn ||
					v.Constraint.Operator != tt.op || v.Constraint.Target != tt.target || v.Constraint.Pattern != tt.pattern {
					t.Errorf("violation fields wrong: %+v", v)
				}
				if !strings.Contains(v.Message, fmt.Sprintf("%q", tt.pattern)) {
					t.Errorf("generated message %q does not name the pattern", v.Message)
				}
			}
			if !res.Passed || res.ItemsEvaluated != 1 || res.ConstraintsEvaluated != 1 || res.Summary.Warn != len(tt.want) {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

func TestCheckAppliesOnlyToMatchingInput(t *testing.T) {
	goFile := []File{{Path: "main.go", Content: "package main\n"}}
	yamlFile := []File{{Path: "app.yaml", Content: "a: b\n"}}
	deps := []Dependency{{Name: "pgx"}}
	tests := []struct {
		name   string
		item   *Item
		in     CheckInput
		applys bool
	}{
		{name: "dependency rule without dependencies", item: constraintItem(t, "r", OpMustUse, TargetDependency, "slog"), in: CheckInput{Files: goFile}},
		{name: "dependency rule with dependencies", item: constraintItem(t, "r", OpMustUse, TargetDependency, "slog"), in: CheckInput{Dependencies: deps}, applys: true},
		{name: "file rule without files", item: constraintItem(t, "r", OpMustExist, TargetFile, "README.md"), in: CheckInput{Dependencies: deps}},
		{name: "code rule without files in scope", item: constraintItem(t, "r", OpMustUse, TargetCode, "slog", "**/*.py"), in: CheckInput{Files: goFile}},
		{name: "import rule without source files", item: constraintItem(t, "r", OpMustUse, TargetImport, "log/slog"), in: CheckInput{Files: yamlFile}},
		{name: "import rule with a source file", item: constraintItem(t, "r", OpMustUse, TargetImport, "log/slog"), in: CheckInput{Files: goFile}, applys: true},
		{name: "config rule without config files", item: constraintItem(t, "r", OpMustUse, TargetConfig, "x"), in: CheckInput{Files: goFile}},
		{name: "config rule with a config file", item: constraintItem(t, "r", OpMustUse, TargetConfig, "x"), in: CheckInput{Files: yamlFile}, applys: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCheck(t, mustSet(t, tt.item), tt.in)
			wantEvaluated, wantViolations := 0, 0
			if tt.applys {
				wantEvaluated, wantViolations = 1, 1
			}
			if res.ConstraintsEvaluated != wantEvaluated || len(res.Violations) != wantViolations {
				t.Errorf("evaluated %d with %d violations, want %d and %d", res.ConstraintsEvaluated, len(res.Violations), wantEvaluated, wantViolations)
			}
		})
	}
}

func TestCheckExamplesMySQL(t *testing.T) {
	set := loadExamples(t)
	res := mustCheck(t, set, CheckInput{Dependencies: []Dependency{{Name: "mysql2", Version: "3.0.0"}}})
	want := CheckResult{
		Passed: false,
		Violations: []Violation{{
			ItemID:    "adr-042-database-selection",
			ItemTitle: "Database Selection for New Services",
			Layer:     LayerOrg,
			Owner:     "acme-org",
			Constraint: Constraint{
				Operator: "must_not_use", Target: "dependency", Pattern: "mysql|mysql2|mariadb|(.+/)?go-sql-driver/mysql",
				Severity: "block", Message: "MySQL not allowed for new services per ADR-042. Use PostgreSQL instead.",
			},
			Severity: "block",
			Message:  "MySQL not allowed for new services per ADR-042. Use PostgreSQL instead.",
			Subject:  "mysql2",
		}},
		Summary:              Summary{Block: 1},
		ItemsEvaluated:       5, // adr-017 is superseded, pat-021 proposed
		ConstraintsEvaluated: 2, // adr-042's and pol-007's dependency rules; pol-007's is info
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("Check =\n%+v\nwant\n%+v", res, want)
	}
}

func TestCheckExamplesAllowedDependencies(t *testing.T) {
	set := loadExamples(t)
	tests := []struct {
		name        string
		min         string
		wantInfo    int
		wantMessage string
	}{
		{name: "default warn hides the info reminder", min: ""},
		{name: "info shows the logging reminder", min: SeverityInfo, wantInfo: 1, wantMessage: "structured logging library"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCheck(t, set, CheckInput{
				Dependencies: []Dependency{{Name: "github.com/jackc/pgx/v5"}, {Name: "lib/pq"}},
				MinSeverity:  tt.min,
			})
			if !res.Passed || res.Summary.Block != 0 || res.Summary.Warn != 0 || res.Summary.Info != tt.wantInfo || len(res.Violations) != tt.wantInfo {
				t.Fatalf("result = %+v", res)
			}
			if tt.wantInfo > 0 && (res.Violations[0].ItemID != "pol-007-structured-logging" || !strings.Contains(res.Violations[0].Message, tt.wantMessage)) {
				t.Errorf("violation = %+v", res.Violations[0])
			}
		})
	}
}

func TestCheckExamplesFiles(t *testing.T) {
	set := loadExamples(t)
	files := []File{
		{Path: "internal/store/db.go", Content: "package store\n\nconst dsn = \"mysql://orders@db/orders\"\n"},
		{Path: "api/routes.ts", Content: "router.get(\"/getOrders\", list);\nconsole.log('ready');\n"},
		{Path: "deploy/values.yaml", Content: "db:\n  password: \"s3cr3tPassw0rd\"\n"},
		{Path: "certs/server.key", Content: "-----BEGIN PRIVATE KEY-----\n"},
		{Path: "orders/orders_handler_v2.go", Content: "package orders\n\nimport \"github.com/pkg/errors\"\n"},
	}
	res := mustCheck(t, set, CheckInput{Files: files, MinSeverity: SeverityInfo})
	type hit struct {
		ID   string
		File string
		Line int
		Sev  string
	}
	var got []hit
	for _, v := range res.Violations {
		got = append(got, hit{v.ItemID, v.File, v.Line, v.Severity})
	}
	want := []hit{
		{"adr-042-database-selection", "internal/store/db.go", 3, "block"},
		{"pat-013-api-naming", "api/routes.ts", 1, "warn"},
		{"pat-013-api-naming", "orders/orders_handler_v2.go", 0, "info"},
		{"pol-007-structured-logging", "api/routes.ts", 2, "warn"},
		{"pol-012-no-plaintext-secrets", "deploy/values.yaml", 2, "block"},
		{"pol-012-no-plaintext-secrets", "certs/server.key", 0, "block"},
		{"spec-101-error-wrapping", "orders/orders_handler_v2.go", 3, "warn"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("violations\n got %+v\nwant %+v", got, want)
	}
	if res.Passed || res.Summary != (Summary{Info: 1, Warn: 3, Block: 3}) {
		t.Errorf("Passed %v, Summary %+v", res.Passed, res.Summary)
	}
}

func TestCheckMinSeverity(t *testing.T) {
	info := mustParse(t, "i.md", itemSource("i", "severity: info", "constraints: [{operator: must_not_use, target: dependency, pattern: x}]"))
	warn := mustParse(t, "w.md", itemSource("w", "constraints: [{operator: must_not_use, target: dependency, pattern: x}]"))
	block := mustParse(t, "b.md", itemSource("b", "severity: info", "constraints: [{operator: must_not_use, target: dependency, pattern: x, severity: block}]"))
	set := mustSet(t, info, warn, block)
	tests := []struct {
		name    string
		min     string
		wantIDs []string
		want    Summary
	}{
		{name: "default is warn", min: "", wantIDs: []string{"b", "w"}, want: Summary{Warn: 1, Block: 1}},
		{name: "info", min: SeverityInfo, wantIDs: []string{"b", "i", "w"}, want: Summary{Info: 1, Warn: 1, Block: 1}},
		{name: "warn", min: SeverityWarn, wantIDs: []string{"b", "w"}, want: Summary{Warn: 1, Block: 1}},
		{name: "block", min: SeverityBlock, wantIDs: []string{"b"}, want: Summary{Block: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCheck(t, set, CheckInput{Dependencies: []Dependency{{Name: "x"}}, MinSeverity: tt.min})
			var ids []string
			for _, v := range res.Violations {
				ids = append(ids, v.ItemID)
			}
			if !slices.Equal(ids, tt.wantIDs) || res.Summary != tt.want || res.Passed {
				t.Errorf("ids %v summary %+v passed %v; want %v %+v false", ids, res.Summary, res.Passed, tt.wantIDs, tt.want)
			}
		})
	}

	t.Run("block violation fails even when filtered out", func(t *testing.T) {
		// Only info and block constraints exist; MinSeverity block lists
		// the block one. Drop it via ItemIDs and the result passes.
		res := mustCheck(t, set, CheckInput{Dependencies: []Dependency{{Name: "x"}}, MinSeverity: SeverityBlock, ItemIDs: []string{"i", "w"}})
		if !res.Passed || len(res.Violations) != 0 {
			t.Errorf("result = %+v", res)
		}
	})

}

func TestCheckInputErrors(t *testing.T) {
	set := loadExamples(t)
	tests := []struct {
		name  string
		in    CheckInput
		field string
	}{
		{name: "unknown severity", in: CheckInput{MinSeverity: "fatal"}, field: "MinSeverity"},
		{name: "upper-case severity", in: CheckInput{MinSeverity: "BLOCK"}, field: "MinSeverity"},
		{name: "empty file path", in: CheckInput{Files: []File{{Path: "a.go"}, {Path: " "}}}, field: "Files[1].Path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := set.Check(context.Background(), tt.in)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Field != tt.field {
				t.Errorf("err = %v, want *InputError for %s", err, tt.field)
			}
		})
	}
}

func TestCheckItemIDs(t *testing.T) {
	set := loadExamples(t)
	deps := []Dependency{{Name: "mysql2"}, {Name: "mongodb"}}
	tests := []struct {
		name        string
		ids         []string
		wantItems   int
		wantUnknown []string
		wantPassed  bool
	}{
		{name: "all accepted items", ids: nil, wantItems: 5, wantPassed: false},
		{name: "only the logging policy", ids: []string{"pol-007-structured-logging"}, wantItems: 1, wantPassed: true},
		{name: "superseded item is skipped", ids: []string{"adr-017-mongodb-for-events"}, wantItems: 0, wantPassed: true},
		{name: "unknown ids are reported once", ids: []string{"adr-999", "adr-042-database-selection", "adr-999", "nope"}, wantItems: 1, wantUnknown: []string{"adr-999", "nope"}, wantPassed: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCheck(t, set, CheckInput{Dependencies: deps, ItemIDs: tt.ids})
			if res.ItemsEvaluated != tt.wantItems || !slices.Equal(res.UnknownItemIDs, tt.wantUnknown) || res.Passed != tt.wantPassed {
				t.Errorf("items %d unknown %v passed %v; want %d %v %v", res.ItemsEvaluated, res.UnknownItemIDs, res.Passed, tt.wantItems, tt.wantUnknown, tt.wantPassed)
			}
			for _, v := range res.Violations {
				if v.ItemID == "adr-017-mongodb-for-events" {
					t.Errorf("superseded item evaluated: %+v", v)
				}
			}
		})
	}
}

func TestCheckContextCancelled(t *testing.T) {
	set := loadExamples(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := set.Check(ctx, CheckInput{Dependencies: []Dependency{{Name: "mysql2"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if !reflect.DeepEqual(res, CheckResult{}) {
		t.Errorf("result on cancellation = %+v, want zero", res)
	}
}

// cancelAfterContext reports cancellation after its Err method has been
// asked n times, to cancel in the middle of a Check.
type cancelAfterContext struct {
	context.Context
	n int
}

func (c *cancelAfterContext) Err() error {
	c.n--
	if c.n < 0 {
		return context.Canceled
	}
	return nil
}

func TestCheckContextCancelledBetweenFiles(t *testing.T) {
	set := mustSet(t, constraintItem(t, "r", OpMustNotMatch, TargetCode, "x"))
	ctx := &cancelAfterContext{Context: context.Background(), n: 2} // one constraint, then one file
	files := []File{{Path: "a.go", Content: "x"}, {Path: "b.go", Content: "x"}}
	if _, err := set.Check(ctx, CheckInput{Files: files}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCheckTruncates(t *testing.T) {
	tests := []struct {
		name     string
		severity string
		min      string
		passed   bool
		listed   int
		trunc    bool
	}{
		{name: "warn rule over the cap", severity: SeverityWarn, min: SeverityWarn, passed: true, listed: MaxViolations, trunc: true},
		{name: "block rule over the cap", severity: SeverityBlock, min: SeverityWarn, passed: false, listed: MaxViolations, trunc: true},
		{name: "filtered rule is not truncation", severity: SeverityInfo, min: SeverityWarn, passed: true, listed: 0, trunc: false},
	}
	content := strings.Repeat("x\n", 3*MaxViolations)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := mustParse(t, "r.md", itemSource("r", "severity: "+tt.severity, "constraints: [{operator: must_not_match, target: code, pattern: x}]"))
			res := mustCheck(t, mustSet(t, it), CheckInput{Files: []File{{Path: "a.txt", Content: content}}, MinSeverity: tt.min})
			if res.Passed != tt.passed || len(res.Violations) != tt.listed || res.Truncated != tt.trunc {
				t.Errorf("passed %v listed %d truncated %v; want %v %d %v", res.Passed, len(res.Violations), res.Truncated, tt.passed, tt.listed, tt.trunc)
			}
			if tt.listed > 0 {
				if last := res.Violations[len(res.Violations)-1]; last.Line != MaxViolations {
					t.Errorf("last listed line = %d, want %d", last.Line, MaxViolations)
				}
			}
		})
	}
}

func TestCheckOrder(t *testing.T) {
	b := mustParse(t, "b.md", itemSource("b", "constraints:",
		"  - {operator: must_not_match, target: code, pattern: bad}",
		"  - {operator: must_not_use, target: dependency, pattern: bad}"))
	a := constraintItem(t, "a", OpMustNotMatch, TargetCode, "bad")
	set := mustSet(t, b, a)
	files := []File{{Path: "z.go", Content: "bad\nbad"}, {Path: "m.go", Content: "ok\nbad"}}
	res := mustCheck(t, set, CheckInput{Files: files, Dependencies: []Dependency{{Name: "bad"}}})
	var got []string
	for _, v := range res.Violations {
		got = append(got, fmt.Sprintf("%s/%s/%s:%d", v.ItemID, v.Constraint.Target, v.File, v.Line))
	}
	want := []string{
		"a/code/m.go:2", "a/code/z.go:1", "a/code/z.go:2",
		"b/code/m.go:2", "b/code/z.go:1", "b/code/z.go:2",
		"b/dependency/:0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("order\n got %v\nwant %v", got, want)
	}
}

func TestCheckConcurrent(t *testing.T) {
	set := loadExamples(t)
	in := CheckInput{Files: matrixFiles, Dependencies: matrixDeps, MinSeverity: SeverityInfo}
	want := mustCheck(t, set, in)
	done := make(chan CheckResult)
	for range 8 {
		go func() {
			res, _ := set.Check(context.Background(), in)
			done <- res
		}()
	}
	for range 8 {
		if got := <-done; !reflect.DeepEqual(got, want) {
			t.Errorf("concurrent Check differs: %+v", got)
		}
	}
}
