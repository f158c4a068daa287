package storetest

import (
	"slices"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

// testVectors holds a backend to the store.VectorStore contract: one
// vector per memory recording its model, stale content refused, vectors of
// another model pending, deletes and content changes dropping the vector.
func testVectors(t *testing.T, s store.Store) {
	vs, ok := s.(store.VectorStore)
	if !ok {
		t.Fatalf("%s does not implement store.VectorStore", s.Backend())
	}
	ctx := t.Context()
	a := newMemory("t1", store.LayerUser, "u1", "deploys happen every tuesday")
	b := newMemory("t1", store.LayerTeam, "x", "invoices live in postgres")
	c := newMemory("t2", store.LayerUser, "u1", "another tenant")
	mustAdd(t, s, a, b, c)
	ptr := newPointer("t1", "k1", "pointer text", "h1")
	mustUpsert(t, s, ptr, true)

	pending := func(model string) []string {
		t.Helper()
		var ids []string
		var cur store.VectorCursor
		for {
			ms, err := vs.PendingVectors(ctx, model, cur, 2)
			if err != nil {
				t.Fatalf("PendingVectors: %v", err)
			}
			if len(ms) == 0 {
				return ids
			}
			for _, m := range ms {
				ids = append(ids, m.Tenant+"/"+m.ID)
			}
			last := ms[len(ms)-1]
			cur = store.VectorCursor{Tenant: last.Tenant, ID: last.ID}
		}
	}
	if got := pending("m1"); len(got) != 4 {
		t.Fatalf("pending before any vector = %v, want 4 memories", got)
	}
	stored, err := vs.SetVectors(ctx, []store.MemoryVector{
		{Tenant: "t1", ID: a.ID, Model: "m1", Content: a.Content, Vec: []float32{1, 0, 0}},
		{Tenant: "t1", ID: b.ID, Model: "m1", Content: "stale text", Vec: []float32{0, 1, 0}},
		{Tenant: "t1", ID: "mem_missing", Model: "m1", Content: "x", Vec: []float32{0, 1, 0}},
		{Tenant: "t1", ID: c.ID, Model: "m1", Content: c.Content, Vec: []float32{0, 1, 0}}, // c is t2's
		{Tenant: "t1", ID: ptr.ID, Model: "m1", Content: ptr.Content, Vec: []float32{0, 0, 1}},
	})
	if err != nil {
		t.Fatalf("SetVectors: %v", err)
	}
	if want := []bool{true, false, false, false, true}; !slices.Equal(stored, want) {
		t.Errorf("stored = %v, want %v", stored, want)
	}
	if got := pending("m1"); len(got) != 2 {
		t.Errorf("pending of m1 = %v, want b and c", got)
	}
	if got := pending("m2"); len(got) != 4 {
		t.Errorf("pending of another model = %v, want all 4", got)
	}
	done, total, err := vs.VectorProgress(ctx, "m1")
	if err != nil || done != 2 || total != 4 {
		t.Errorf("VectorProgress = %d, %d, %v; want 2, 4", done, total, err)
	}

	scan := func(model string) map[string]store.MemoryVector {
		t.Helper()
		out := map[string]store.MemoryVector{}
		if err := vs.ScanVectors(ctx, model, func(v store.MemoryVector) error { out[v.ID] = v; return nil }); err != nil {
			t.Fatalf("ScanVectors: %v", err)
		}
		return out
	}
	got := scan("m1")
	if v := got[a.ID]; v.Tenant != "t1" || v.Layer != store.LayerUser || v.ScopeID != "u1" || !slices.Equal(v.Vec, []float32{1, 0, 0}) {
		t.Errorf("scanned vector of a = %+v", v)
	}
	if len(got) != 2 || len(scan("m2")) != 0 {
		t.Errorf("scanned %d vectors of m1 (want 2) and %d of m2 (want 0)", len(got), len(scan("m2")))
	}

	// Another model replaces the vector: m1 no longer has one.
	if _, err := vs.SetVectors(ctx, []store.MemoryVector{{Tenant: "t1", ID: a.ID, Model: "m2", Content: a.Content, Vec: []float32{0.5, 0.5}}}); err != nil {
		t.Fatal(err)
	}
	if len(scan("m1")) != 1 || len(scan("m2")) != 1 {
		t.Errorf("after re-embedding with m2: %d m1 vectors (want 1), %d m2 (want 1)", len(scan("m1")), len(scan("m2")))
	}

	// A pointer's new content drops its vector; the same content keeps it.
	ptr.Content = "new pointer text"
	mustUpsert(t, s, ptr, false)
	if _, ok := scan("m1")[ptr.ID]; ok {
		t.Error("the pointer kept the vector of its old content")
	}
	// Deleting a memory drops its vector.
	if err := s.DeleteMemory(ctx, "t1", a.ID); err != nil {
		t.Fatal(err)
	}
	if len(scan("m2")) != 0 {
		t.Error("a deleted memory kept its vector")
	}

	ms, err := vs.GetMemories(ctx, "t1", []string{b.ID, c.ID, "mem_missing", ptr.ID})
	if err != nil {
		t.Fatalf("GetMemories: %v", err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	slices.Sort(ids)
	want := []string{b.ID, ptr.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("GetMemories = %v, want %v (t2's memory and unknown ids left out)", ids, want)
	}

	for _, bad := range [][]float32{nil, {float32(posInf())}} {
		if _, err := vs.SetVectors(ctx, []store.MemoryVector{{Tenant: "t1", ID: b.ID, Model: "m1", Content: b.Content, Vec: bad}}); err == nil {
			t.Errorf("SetVectors(%v) succeeded", bad)
		}
	}
}

func posInf() float64 {
	zero := 0.0
	return 1 / zero
}
