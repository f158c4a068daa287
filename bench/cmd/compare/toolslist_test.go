package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/bench/internal/drivers"
	"github.com/toolsvc/toolsvc/bench/internal/synthetic"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// TestListTarget drives the tools/list client against the bridge: pages
// of the right length pass, and a client expecting another length fails.
func TestListTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		tools    int
		expected int // what the client is told the registry holds
		want     string
	}{
		{name: "one page", tools: 10, expected: 10},
		{name: "first of several pages", tools: 102, expected: 102},
		{name: "wrong length", tools: 10, expected: 12, want: "malformed"},
		{name: "missing cursor", tools: 100, expected: 102, want: "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := synthetic.Registry(tt.tools)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := synthetic.Channel(r)
			if err != nil {
				t.Fatal(err)
			}
			b, err := mcpbridge.New(mcpbridge.Config{Registry: r, Channel: ch, Auth: auth.NewDevelopment(), PageSize: toolsListPage})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(b.Close)
			srv := httptest.NewServer(b)
			t.Cleanup(srv.Close)
			client := drivers.NewHTTPClient(2)
			t.Cleanup(client.CloseIdleConnections)
			target, err := newListTarget(client, srv.URL+"/mcp", tt.expected)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 { // the first calls verify by scanning, later ones by comparison
				if got := target.Call(context.Background(), i%2); got != tt.want {
					t.Fatalf("call %d = %q, want %q", i, got, tt.want)
				}
			}
		})
	}
}

// TestToolsListBytes: the default listing is smaller than the whole one,
// compaction smaller still, and the rendered table says so. Run with -v to see the table the report writes.
func TestToolsListBytes(t *testing.T) {
	sizes, err := toolsListBytes(t.Context(), []int{10, 100, 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sizes {
		if s.Compact <= 0 || s.Compact >= s.Default || s.Default >= s.Full {
			t.Errorf("%d tools: full %d bytes, default %d, compacted %d; want each smaller than the one before", s.Tools, s.Full, s.Default, s.Compact)
		}
	}
	var b strings.Builder
	writeListBytes(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, sizes)
	t.Log("\n" + b.String())
}
