package storetest

import (
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

// testUpstreamDefinitions: the first definition of a tool recorded stays,
// whoever records after it (concurrently too) reads that one; an approval
// replaces it; definitions are per upstream.
func testUpstreamDefinitions(t *testing.T, s store.Store) {
	ds, ok := s.(store.DefinitionStore)
	if !ok {
		t.Fatalf("%s does not implement store.DefinitionStore", s.Backend())
	}
	ctx := t.Context()
	var wg sync.WaitGroup
	got := make([]*store.ToolDefinition, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := ds.PinDefinition(ctx, &store.ToolDefinition{Upstream: "fs", Tool: "read_file",
				Fingerprint: "sha256:" + string(rune('a'+i)), Definition: []byte(`{"n":` + string(rune('0'+i)) + `}`), ApprovedBy: "first seen"})
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = d
		}()
	}
	wg.Wait()
	for _, d := range got {
		if d == nil || d.Fingerprint != got[0].Fingerprint || string(d.Definition) != string(got[0].Definition) {
			t.Fatalf("replicas disagree on the first definition: %+v vs %+v", d, got[0])
		}
	}
	if err := ds.ApproveDefinition(ctx, &store.ToolDefinition{Upstream: "fs", Tool: "read_file", Fingerprint: "sha256:new",
		Definition: []byte(`{"new":true}`), ApprovedBy: "ops"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ds.PinDefinition(ctx, &store.ToolDefinition{Upstream: "other", Tool: "read_file", Fingerprint: "sha256:o",
		Definition: []byte(`{}`), ApprovedBy: "first seen"}); err != nil {
		t.Fatal(err)
	}
	all, err := ds.ApprovedDefinitions(ctx, "fs")
	if err != nil {
		t.Fatal(err)
	}
	d := all["read_file"]
	if len(all) != 1 || d.Fingerprint != "sha256:new" || string(d.Definition) != `{"new":true}` || d.ApprovedBy != "ops" || d.At.IsZero() {
		t.Fatalf("approved = %+v", all)
	}
	again, err := ds.PinDefinition(ctx, &store.ToolDefinition{Upstream: "fs", Tool: "read_file", Fingerprint: "sha256:later", Definition: []byte(`{}`)})
	if err != nil || again.Fingerprint != "sha256:new" {
		t.Fatalf("a later first-seen replaced the approval: %+v %v", again, err)
	}
}
