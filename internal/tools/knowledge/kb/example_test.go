package kb_test

import (
	"context"
	"fmt"

	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// Load the example knowledge library and check a planned dependency
// against what one caller of tenant acme sees.
func Example() {
	lib, loadErrs, err := kb.LoadLibrary("../../../../examples/knowledge", kb.LibraryOptions{CompanyWide: true})
	if err != nil {
		fmt.Println("cannot read knowledge:", err)
		return
	}
	for _, le := range loadErrs {
		fmt.Println("skipped", le.Error())
	}

	set := lib.For("acme")
	caller := &kb.Viewer{OrgID: "acme-org", TeamID: "acme-platform", ProjectID: "acme-shop"}
	res, err := set.Check(context.Background(), kb.CheckInput{
		Viewer:       caller,
		Dependencies: []kb.Dependency{{Name: "mysql2", Version: "3.0.0"}},
		Files: []kb.File{{
			Path:    "cmd/orders/main.go",
			Content: "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"starting\")\n}\n",
		}},
	})
	if err != nil {
		fmt.Println("check failed:", err)
		return
	}
	fmt.Println("passed:", res.Passed)
	for _, v := range res.Violations {
		fmt.Printf("%s (%s) [%s] %s %s %q", v.ItemID, v.Layer, v.Severity, v.Constraint.Operator, v.Constraint.Target, v.Subject)
		if v.File != "" {
			fmt.Printf(" at %s:%d", v.File, v.Line)
		}
		fmt.Println()
		fmt.Println("  " + v.Message)
	}
	fmt.Printf("summary: %+v\n", res.Summary)

	matches, total := set.Query(kb.Query{Text: "database selection", Type: kb.TypeADR, Viewer: caller})
	fmt.Println("query total:", total)
	for _, m := range matches {
		fmt.Printf("%s %.2f\n", m.Item.ID, m.Score)
	}
	// Output:
	// passed: false
	// adr-042-database-selection (org) [block] must_not_use dependency "mysql2"
	//   MySQL not allowed for new services per ADR-042. Use PostgreSQL instead.
	// pol-007-structured-logging (company) [warn] must_not_match code "fmt.Println" at cmd/orders/main.go:6
	//   Use the structured logger (log/slog, pino, winston) instead of printing to stdout.
	// summary: {Info:0 Warn:1 Block:1}
	// query total: 1
	// adr-042-database-selection 1.00
}
