package tools

import (
	"context"
	"slices"
	"strings"
	"testing"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tests/support/tooltest"
)

func ptr[T any](v T) *T { return &v }

func addMemory(t testing.TB, c memoryv1.MemoryServiceClient, ctx context.Context, req *memoryv1.AddMemoryRequest) string {
	t.Helper()
	resp, err := c.AddMemory(ctx, req)
	if err != nil {
		t.Fatalf("add-memory %q: %v", req.GetContent(), err)
	}
	if resp.GetMetadata().GetTool() != "add-memory" || resp.GetAgentHints().GetMetadata() == nil {
		t.Fatalf("result not completed by the chain: metadata %v", resp.GetMetadata())
	}
	return resp.GetData().GetMemoryId()
}

func resultIDs(d *memoryv1.SearchMemoriesData) []string {
	var out []string
	for _, r := range d.GetResults() {
		out = append(out, r.GetMemoryId())
	}
	return out
}

func TestMemoryTools(t *testing.T) {
	tooltest.Backends(t, func(t *testing.T, backend string) {
		srv := tooltest.Start(t, backend, "")
		c := memoryv1.NewMemoryServiceClient(srv.Conn)
		alice := tooltest.As(t.Context(), tooltest.Alice, "x-session-id", "sess-1", "x-agent-id", "agent-1")
		bob := tooltest.As(t.Context(), tooltest.Bob)
		gina := tooltest.As(t.Context(), tooltest.Gina)

		t.Run("add-memory defaults", func(t *testing.T) {
			resp, err := c.AddMemory(alice, &memoryv1.AddMemoryRequest{Content: "Alice prefers functional programming patterns over OOP"})
			if err != nil {
				t.Fatal(err)
			}
			d := resp.GetData()
			if !d.GetSuccess() || d.GetLayer() != "user" || !strings.HasPrefix(d.GetMemoryId(), "mem_") || d.GetMessage() != "Memory stored successfully" {
				t.Errorf("data = %v", d)
			}
			s, err := c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "functional programming patterns"})
			if err != nil {
				t.Fatal(err)
			}
			r := s.GetData().GetResults()
			if len(r) != 1 || r[0].GetMemoryId() != d.GetMemoryId() || r[0].GetSourceType() != "manual" || r[0].GetLayer() != "user" {
				t.Errorf("search results = %v, want the memory with sourceType manual", r)
			}
		})

		t.Run("validation", func(t *testing.T) {
			tests := []struct {
				name  string
				call  func() error
				field string
			}{
				{name: "empty content", field: "content", call: func() error { _, err := c.AddMemory(alice, &memoryv1.AddMemoryRequest{}); return err }},
				{name: "unknown layer", field: "layer", call: func() error {
					_, err := c.AddMemory(alice, &memoryv1.AddMemoryRequest{Content: "x", Layer: "galaxy"})
					return err
				}},
				{name: "limit 0", field: "limit", call: func() error {
					_, err := c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "x", Limit: ptr(uint32(0))})
					return err
				}},
				{name: "limit 101", field: "limit", call: func() error {
					_, err := c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "x", Limit: ptr(uint32(101))})
					return err
				}},
				{name: "threshold above 1", field: "threshold", call: func() error {
					_, err := c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "x", Threshold: ptr(1.5)})
					return err
				}},
				{name: "threshold below 0", field: "threshold", call: func() error {
					_, err := c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "x", Threshold: ptr(-0.1)})
					return err
				}},
				{name: "empty query", field: "query", call: func() error { _, err := c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{}); return err }},
				{name: "malformed memory id", field: "memoryId", call: func() error {
					_, err := c.DeleteMemory(alice, &memoryv1.DeleteMemoryRequest{MemoryId: "abc"})
					return err
				}},
				{name: "maxBullets 21", field: "maxBullets", call: func() error {
					_, err := c.SummarizeMemories(alice, &memoryv1.SummarizeMemoriesRequest{Query: "x", MaxBullets: ptr(uint32(21))})
					return err
				}},
				{name: "missing project id", field: "layer", call: func() error {
					_, err := c.AddMemory(alice, &memoryv1.AddMemoryRequest{Content: "x", Layer: "project"})
					return err
				}},
				{name: "missing user id", field: "layer", call: func() error {
					_, err := c.AddMemory(tooltest.As(t.Context(), tooltest.Service), &memoryv1.AddMemoryRequest{Content: "x"})
					return err
				}},
				{name: "missing session id in search", field: "layers[0]", call: func() error {
					_, err := c.SearchMemories(bob, &memoryv1.SearchMemoriesRequest{Query: "x", Layers: []string{"session"}})
					return err
				}},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					te := tooltest.WantCode(t, tc.call(), toolerr.InvalidInput)
					var fields []string
					for _, v := range te.GetFieldViolations() {
						fields = append(fields, v.GetField())
					}
					if !slices.Contains(fields, tc.field) {
						t.Errorf("field violations %v, want %s (%s)", fields, tc.field, te.GetMessage())
					}
				})
			}
			for _, limit := range []uint32{1, 100} {
				if _, err := c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "x", Limit: &limit}); err != nil {
					t.Errorf("limit %d refused: %v", limit, err)
				}
			}
		})

		t.Run("layers, precedence, limits and tenants", func(t *testing.T) {
			ids := map[string]string{}
			for _, l := range []string{"company", "org", "team", "session", "user", "agent"} {
				ids[l] = addMemory(t, c, alice, &memoryv1.AddMemoryRequest{
					Content: "The " + l + " note: rotate the payment gateway keys quarterly", Layer: l, Tags: []string{"security", l}})
			}
			want := []string{ids["agent"], ids["user"], ids["session"], ids["team"], ids["org"], ids["company"]}
			resp, err := c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "rotate payment gateway keys"})
			if err != nil {
				t.Fatal(err)
			}
			d := resp.GetData()
			if !slices.Equal(resultIDs(d), want) || d.GetTotalCount() != 6 {
				t.Errorf("ids = %v (total %d), want %v", resultIDs(d), d.GetTotalCount(), want)
			}
			if !slices.Equal(d.GetSkippedLayers(), []string{"project"}) {
				t.Errorf("skipped = %v, want [project] (alice sent no project id)", d.GetSkippedLayers())
			}
			resp, err = c.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "rotate payment gateway keys", Limit: ptr(uint32(3)), Tags: []string{"security"}})
			if err != nil {
				t.Fatal(err)
			}
			if d := resp.GetData(); !slices.Equal(resultIDs(d), want[:3]) || d.GetTotalCount() != 6 {
				t.Errorf("limit 3: ids = %v (total %d)", resultIDs(d), d.GetTotalCount())
			}

			// Bob shares the tenant, org and company but not the user,
			// session, agent or team scopes.
			resp, err = c.SearchMemories(bob, &memoryv1.SearchMemoriesRequest{Query: "rotate payment gateway keys"})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultIDs(resp.GetData()); !slices.Equal(got, []string{ids["org"], ids["company"]}) {
				t.Errorf("bob sees %v, want only the org and company memories", got)
			}
			// Gina is another tenant: nothing, not even the company layer.
			resp, err = c.SearchMemories(gina, &memoryv1.SearchMemoriesRequest{Query: "rotate payment gateway keys", Threshold: ptr(0.0)})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(resp.GetData().GetResults()); n != 0 {
				t.Errorf("another tenant sees %d of acme's memories", n)
			}
			sum, err := c.SummarizeMemories(gina, &memoryv1.SummarizeMemoriesRequest{Query: "rotate payment gateway keys", Threshold: ptr(0.0)})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(sum.GetData().GetBullets()); n != 0 {
				t.Errorf("another tenant's summary has %d bullets from acme", n)
			}
			_, err = c.DeleteMemory(gina, &memoryv1.DeleteMemoryRequest{MemoryId: ids["company"]})
			tooltest.WantCode(t, err, toolerr.NotFound)
			_, err = c.DeleteMemory(bob, &memoryv1.DeleteMemoryRequest{MemoryId: ids["user"]})
			tooltest.WantCode(t, err, toolerr.NotFound)

			// Alice deletes her own; it is gone, and a second delete is NOT_FOUND.
			if _, err := c.DeleteMemory(alice, &memoryv1.DeleteMemoryRequest{MemoryId: ids["agent"]}); err != nil {
				t.Fatal(err)
			}
			te := tooltest.WantCode(t, func() error {
				_, err := c.DeleteMemory(alice, &memoryv1.DeleteMemoryRequest{MemoryId: ids["agent"]})
				return err
			}(), toolerr.NotFound)
			if te.GetDetails().GetFields()["memoryId"].GetStringValue() != ids["agent"] {
				t.Errorf("details = %v", te.GetDetails())
			}
		})

		t.Run("default limit is 10", func(t *testing.T) {
			for i := range 12 {
				addMemory(t, c, bob, &memoryv1.AddMemoryRequest{Content: "bob observation " + strings.Repeat("x", i+2) + " about zebra migration"})
			}
			resp, err := c.SearchMemories(bob, &memoryv1.SearchMemoriesRequest{Query: "zebra migration"})
			if err != nil {
				t.Fatal(err)
			}
			if d := resp.GetData(); len(d.GetResults()) != 10 || d.GetTotalCount() != 12 {
				t.Errorf("results %d, total %d; want 10 and 12", len(d.GetResults()), d.GetTotalCount())
			}
		})

		t.Run("grounded summaries", func(t *testing.T) {
			contents := map[string]string{}
			for _, text := range []string{
				"Deploys happen on Tuesdays. Friday deploys need a director's approval. The cafeteria closes at three.",
				"Rollbacks need two approvals.\nEvery deploy is announced in the releases channel.",
			} {
				contents[addMemory(t, c, alice, &memoryv1.AddMemoryRequest{Content: text, Layer: "team"})] = text
			}
			resp, err := c.SummarizeMemories(alice, &memoryv1.SummarizeMemoriesRequest{Query: "deploy approvals", Layers: []string{"team"}})
			if err != nil {
				t.Fatal(err)
			}
			d := resp.GetData()
			if d.GetType() != "summary" || len(d.GetBullets()) < 2 || !slices.Equal(d.GetSearchedLayers(), []string{"team"}) {
				t.Fatalf("data = %v", d)
			}
			for _, b := range d.GetBullets() {
				if !strings.Contains(contents[b.GetMemoryId()], b.GetEvidence()) {
					t.Errorf("evidence %q is not in memory %s", b.GetEvidence(), b.GetMemoryId())
				}
				if strings.Contains(b.GetClaim(), "cafeteria") {
					t.Errorf("off-topic claim %q", b.GetClaim())
				}
			}
			resp, err = c.SummarizeMemories(alice, &memoryv1.SummarizeMemoriesRequest{Query: "volcanic eruptions"})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(resp.GetData().GetBullets()); n != 0 || resp.GetData().GetType() != "summary" {
				t.Errorf("a query matching nothing gave %d bullets", n)
			}
		})
	})
}
