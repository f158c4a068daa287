package memory_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

var allIDs = map[string]string{
	"agent_id": "a1", "user_id": "u1", "session_id": "s1", "project_id": "p1", "team_id": "t1", "org_id": "o1",
}

func TestSearchRanking(t *testing.T) {
	st := teststore.SQLite(t)
	s := memory.New(st)
	ctx := caller(t, "acme", allIDs)
	byLayer := map[string]string{}
	// Added in reverse precedence so that insertion order cannot explain
	// the result order.
	for _, l := range []string{"company", "org", "team", "project", "session", "user", "agent"} {
		byLayer[l] = add(t, ctx, s, fmt.Sprintf("The %s layer says deploy the billing service with canary releases", l), l, "deploy", l)
	}
	partial := add(t, ctx, s, "billing invoices are monthly", "user")
	dup := add(t, ctx, s, "The user layer says: deploy the billing service with canary releases!", "company")

	search := func(t *testing.T, req *memoryv1.SearchMemoriesRequest) *memoryv1.SearchMemoriesData {
		t.Helper()
		resp, err := s.SearchMemories(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.GetData().GetResults() {
			if r.GetScore() < 0 || r.GetScore() > 1 {
				t.Errorf("score %v outside 0..1", r.GetScore())
			}
		}
		return resp.GetData()
	}
	ids := func(d *memoryv1.SearchMemoriesData) []string {
		var out []string
		for _, r := range d.GetResults() {
			out = append(out, r.GetMemoryId())
		}
		return out
	}
	precedence := []string{byLayer["agent"], byLayer["user"], byLayer["session"], byLayer["project"], byLayer["team"], byLayer["org"], byLayer["company"]}

	t.Run("layer precedence, duplicates removed", func(t *testing.T) {
		d := search(t, &memoryv1.SearchMemoriesRequest{Query: "deploy billing canary"})
		if !slices.Equal(ids(d), precedence) {
			t.Errorf("order = %v, want %v", ids(d), precedence)
		}
		if d.GetTotalCount() != 7 || d.GetDuplicatesRemoved() != 1 {
			t.Errorf("totalCount = %d, duplicatesRemoved = %d; want 7 and 1 (%s duplicates the user memory)", d.GetTotalCount(), d.GetDuplicatesRemoved(), dup)
		}
		if !slices.Equal(d.GetSearchedLayers(), []string{"agent", "user", "session", "project", "team", "org", "company"}) || len(d.GetSkippedLayers()) != 0 {
			t.Errorf("searched %v, skipped %v", d.GetSearchedLayers(), d.GetSkippedLayers())
		}
	})
	t.Run("limit keeps totalCount", func(t *testing.T) {
		d := search(t, &memoryv1.SearchMemoriesRequest{Query: "deploy billing canary", Limit: ptr(uint32(2))})
		if !slices.Equal(ids(d), precedence[:2]) || d.GetTotalCount() != 7 {
			t.Errorf("ids = %v, totalCount = %d", ids(d), d.GetTotalCount())
		}
	})
	t.Run("threshold drops weak matches", func(t *testing.T) {
		low := search(t, &memoryv1.SearchMemoriesRequest{Query: "monthly canary releases", Threshold: ptr(0.2)})
		high := search(t, &memoryv1.SearchMemoriesRequest{Query: "monthly canary releases", Threshold: ptr(0.95)})
		if !slices.Contains(ids(low), partial) || slices.Contains(ids(high), partial) {
			t.Errorf("threshold 0.2 gave %v, 0.95 gave %v; want the one-word match only at 0.2", ids(low), ids(high))
		}
		for _, r := range high.GetResults() {
			if r.GetScore() < 0.95 {
				t.Errorf("result with score %v above threshold 0.95", r.GetScore())
			}
		}
	})
	t.Run("explicit layers", func(t *testing.T) {
		d := search(t, &memoryv1.SearchMemoriesRequest{Query: "deploy billing canary", Layers: []string{"org", "agent"}})
		if !slices.Equal(ids(d), []string{byLayer["agent"], byLayer["org"]}) || !slices.Equal(d.GetSearchedLayers(), []string{"agent", "org"}) {
			t.Errorf("ids = %v, searched %v", ids(d), d.GetSearchedLayers())
		}
	})
	t.Run("tags must all match", func(t *testing.T) {
		d := search(t, &memoryv1.SearchMemoriesRequest{Query: "deploy billing canary", Tags: []string{"deploy", "team"}})
		if !slices.Equal(ids(d), []string{byLayer["team"]}) {
			t.Errorf("ids = %v, want only the team memory", ids(d))
		}
	})
	t.Run("no match suggests lowering the threshold", func(t *testing.T) {
		resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: "kubernetes helm"})
		if err != nil {
			t.Fatal(err)
		}
		a := resp.GetAgentHints().GetSuggestedNextActions()
		if len(resp.GetData().GetResults()) != 0 || len(a) == 0 || a[0].GetData().GetFields()["threshold"].GetNumberValue() >= 0.7 {
			t.Errorf("results %v, next actions %v", resp.GetData().GetResults(), a)
		}
	})
}

func TestLayerIdentifiers(t *testing.T) {
	st := teststore.SQLite(t)
	s := memory.New(st)
	userOnly := caller(t, "acme", map[string]string{"user_id": "u1"})
	none := caller(t, "acme", map[string]string{})
	tests := []struct {
		name      string
		call      func() error
		wantField string
		wantWord  string
	}{
		{name: "default layer needs a user id", wantField: "layer", wantWord: "x-user-id",
			call: func() error { _, err := s.AddMemory(none, &memoryv1.AddMemoryRequest{Content: "x"}); return err }},
		{name: "session layer needs a session id", wantField: "layer", wantWord: "x-session-id",
			call: func() error {
				_, err := s.AddMemory(userOnly, &memoryv1.AddMemoryRequest{Content: "x", Layer: "session"})
				return err
			}},
		{name: "searching the agent layer needs an agent id", wantField: "layers[1]", wantWord: "x-agent-id",
			call: func() error {
				_, err := s.SearchMemories(userOnly, &memoryv1.SearchMemoriesRequest{Query: "x", Layers: []string{"user", "agent"}})
				return err
			}},
		{name: "summarizing the project layer needs a project id", wantField: "layers[0]", wantWord: "x-project-id",
			call: func() error {
				_, err := s.SummarizeMemories(userOnly, &memoryv1.SummarizeMemoriesRequest{Query: "x", Layers: []string{"project"}})
				return err
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			te := wantCode(t, tc.call(), toolerr.InvalidInput)
			if len(te.Violations) != 1 || te.Violations[0].GetField() != tc.wantField || !strings.Contains(te.Message, tc.wantWord) {
				t.Errorf("error = %v (%v), want field %s mentioning %s", te, te.Violations, tc.wantField, tc.wantWord)
			}
		})
	}

	// Company is always available: the tenant scopes it.
	add(t, none, s, "company-wide fact about payroll", "company")
	resp, err := s.SearchMemories(userOnly, &memoryv1.SearchMemoriesRequest{Query: "payroll"})
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetData()
	if len(d.GetResults()) != 1 || !slices.Equal(d.GetSearchedLayers(), []string{"user", "company"}) ||
		!slices.Equal(d.GetSkippedLayers(), []string{"agent", "session", "project", "team", "org"}) {
		t.Errorf("results %d, searched %v, skipped %v", len(d.GetResults()), d.GetSearchedLayers(), d.GetSkippedLayers())
	}
	if n := len(resp.GetAgentHints().GetContextNeeded()); n != 5 {
		t.Errorf("contextNeeded has %d entries, want one per skipped layer", n)
	}
}

func TestSummarizeMemories(t *testing.T) {
	st := teststore.SQLite(t)
	s := memory.New(st)
	ctx := caller(t, "acme", allIDs)
	contents := map[string]string{}
	for _, c := range []struct{ layer, text string }{
		{"user", "Deploys happen on Tuesdays. The team avoids Friday deploys.  Lunch is at noon."},
		{"project", "Rollbacks need two approvals.\nEvery deploy is announced in #releases."},
		{"org", "Office plants are watered on Mondays."},
	} {
		contents[add(t, ctx, s, c.text, c.layer)] = c.text
	}
	resp, err := s.SummarizeMemories(ctx, &memoryv1.SummarizeMemoriesRequest{Query: "deploy rollbacks", Threshold: ptr(0.1)})
	if err != nil {
		t.Fatal(err)
	}
	d := resp.GetData()
	if d.GetType() != "summary" || len(d.GetBullets()) == 0 {
		t.Fatalf("data = %v", d)
	}
	for _, b := range d.GetBullets() {
		content, ok := contents[b.GetMemoryId()]
		if !ok || !strings.Contains(content, b.GetEvidence()) {
			t.Errorf("evidence %q is not a substring of memory %s", b.GetEvidence(), b.GetMemoryId())
		}
		if strings.Contains(b.GetClaim(), "Lunch") || strings.Contains(b.GetClaim(), "plants") {
			t.Errorf("off-topic claim %q", b.GetClaim())
		}
	}
	if got := d.GetBullets()[0].GetClaim(); got != "Rollbacks need two approvals." {
		t.Errorf("first bullet = %q, want the sentence covering the most query words", got)
	}

	resp, err = s.SummarizeMemories(ctx, &memoryv1.SummarizeMemoriesRequest{Query: "deploy", MaxBullets: ptr(uint32(1)), Threshold: ptr(0.1)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetData().GetBullets()); n != 1 {
		t.Errorf("maxBullets 1 gave %d bullets", n)
	}

	resp, err = s.SummarizeMemories(ctx, &memoryv1.SummarizeMemoriesRequest{Query: "quantum chromodynamics"})
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.GetData(); len(d.GetBullets()) != 0 || d.GetType() != "summary" || d.GetMemoriesConsidered() != 0 {
		t.Errorf("unmatched query: %v", d)
	}
	if resp.GetAgentHints().GetConfidence() > 0.5 {
		t.Errorf("confidence %v for an empty summary", resp.GetAgentHints().GetConfidence())
	}
}
