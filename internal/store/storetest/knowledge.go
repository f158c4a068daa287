package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

// testKnowledgeVersion: the version starts at zero, moves by one for each
// new digest, stays for a digest already current, and concurrent
// publishers of distinct digests get distinct versions.
func testKnowledgeVersion(t *testing.T, s store.Store) {
	ks, ok := s.(store.KnowledgeVersionStore)
	if !ok {
		t.Fatalf("%s store does not implement store.KnowledgeVersionStore", s.Backend())
	}
	ctx := t.Context()
	if v, err := ks.KnowledgeVersion(ctx); err != nil || v.Version != 0 || !v.At.IsZero() {
		t.Fatalf("before any publish: %+v, %v; want the zero version", v, err)
	}
	v1, err := ks.PublishKnowledge(ctx, "d1")
	if err != nil || v1.Version != 1 || v1.Digest != "d1" || v1.At.IsZero() {
		t.Fatalf("first publish = %+v, %v; want version 1 of d1", v1, err)
	}
	if same, err := ks.PublishKnowledge(ctx, "d1"); err != nil || same.Version != 1 || !same.At.Equal(v1.At) {
		t.Fatalf("publishing the current digest = %+v, %v; want version 1 unchanged", same, err)
	}
	v2, err := ks.PublishKnowledge(ctx, "d2")
	if err != nil || v2.Version != 2 || v2.Digest != "d2" {
		t.Fatalf("new digest = %+v, %v; want version 2", v2, err)
	}
	if got, err := ks.KnowledgeVersion(ctx); err != nil || got.Version != 2 || got.Digest != "d2" || got.At.Location().String() != "UTC" {
		t.Fatalf("KnowledgeVersion = %+v, %v; want version 2 of d2, in UTC", got, err)
	}
	const n = 8
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		seen = map[int64]bool{}
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := ks.PublishKnowledge(ctx, fmt.Sprintf("c%d", i))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[v.Version] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d concurrent publishes of new digests got %d distinct versions, want %d", n, len(seen), n)
	}
	if got, _ := ks.KnowledgeVersion(ctx); got.Version != 2+n {
		t.Errorf("after %d more publishes the version is %d, want %d", n, got.Version, 2+n)
	}
}
