package main

import (
	"strings"
	"testing"
)

// TestWriteTable: each store's toolsvc row is divided by its own floor,
// server and database CPU together, and only PostgreSQL shows a database
// column.
func TestWriteTable(t *testing.T) {
	var b strings.Builder
	writeTable(&b, []writeRow{
		{Store: "sqlite", Series: "toolsvc add-memory", Writes: 10, ServerUs: 600},
		{Store: "sqlite", Series: "floor", Writes: 10, ServerUs: 300},
		{Store: "postgres", Series: "toolsvc add-memory", Writes: 10, ServerUs: 800, DatabaseUs: 200},
		{Store: "postgres", Series: "floor", Writes: 10, DatabaseUs: 100},
	})
	out := b.String()
	for _, want := range []string{
		"| sqlite | toolsvc add-memory | 10 | 0 | 0 | 0.00 | 0.00 | 600 | – | 2.0× |",
		"| postgres | toolsvc add-memory | 10 | 0 | 0 | 0.00 | 0.00 | 800 | 200 | 10.0× |",
		"| postgres | floor | 10 | 0 | 0 | 0.00 | 0.00 | 0 | 100 | – |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestParseOnly(t *testing.T) {
	if c, err := parse([]string{"--only", "writes"}); err != nil || c.only != onlyWrites {
		t.Errorf("--only writes: %+v, %v", c.only, err)
	}
	if _, err := parse([]string{"--only", "reads"}); err == nil || !strings.Contains(err.Error(), "--only") {
		t.Errorf("--only reads: %v, want an error naming the flag", err)
	}
}
