package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

// TestConcurrentAddsCommitTogether adds memories from many goroutines at
// once, so that they are committed in groups, some of them with an id
// that another call uses too: each call must get its own outcome (stored,
// or ErrConflict for the second of two equal ids), every stored memory
// must be readable with its tags and found by its words, and nothing else
// stored. Calls whose context is already cancelled must store nothing.
func TestConcurrentAddsCommitTogether(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "store.db"))
	ctx := t.Context()
	const workers, each = 16, 25
	var mu sync.Mutex
	stored := map[string]string{}
	conflicts := 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := ""
				if i%5 == 0 {
					// Two workers share each of these ids.
					id = fmt.Sprintf("mem_shared_%d_%d", w/2, i)
				}
				content := fmt.Sprintf("worker%dq item%dq grouped commit", w, i)
				m := &store.Memory{ID: id, Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: content, Tags: []string{"g"}, SourceType: store.SourceManual}
				err := s.AddMemory(ctx, m)
				mu.Lock()
				switch {
				case err == nil:
					stored[m.ID] = content
				case errors.Is(err, store.ErrConflict) && id != "":
					conflicts++
				default:
					t.Errorf("AddMemory(%q): %v", id, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if want := workers / 2 * (each / 5); conflicts != want {
		t.Errorf("conflicts = %d, want %d", conflicts, want)
	}
	if n, err := s.CountMemories(ctx, "t1"); err != nil || n != len(stored) {
		t.Fatalf("CountMemories = %d, %v; want %d", n, err, len(stored))
	}
	for id, content := range stored {
		m, err := s.GetMemory(ctx, "t1", id)
		if err != nil || m.Content != content || len(m.Tags) != 1 {
			t.Fatalf("GetMemory(%s) = %+v, %v; want %q tagged", id, m, err, content)
		}
	}
	res, err := s.SearchMemories(ctx, store.SearchQuery{Tenant: "t1", Terms: []string{"grouped"}, Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: "u1"}}, CandidateLimit: 1000})
	if err != nil || res.Matched != len(stored) {
		t.Fatalf("search matched %d, %v; want %d", res.Matched, err, len(stored))
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	m := &store.Memory{Tenant: "t1", Layer: store.LayerUser, ScopeID: "u1", Content: "never stored", SourceType: store.SourceManual}
	if err := s.AddMemory(cancelled, m); err == nil {
		t.Error("AddMemory with a cancelled context: want an error")
	}
	if n, _ := s.CountMemories(ctx, "t1"); n != len(stored) {
		t.Errorf("a cancelled add stored a memory: %d memories, want %d", n, len(stored))
	}
}
