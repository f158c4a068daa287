package memory_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// vocabulary makes memories that share the query word and little else, so
// that none is a near-duplicate of another.
var vocabulary = strings.Fields(`amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon
	marble nectar obsidian pepper quartz raven saffron tundra umber velvet walnut xenon yarrow zephyr
	anchor beacon canyon dune estuary falcon glacier heron island jasper kestrel lantern meadow nimbus
	orchid prairie quill ridge summit thistle upland valley willow yonder zinnia bramble copper drift`)

func distinctContent(r *rand.Rand, n int) string {
	w := slices.Clone(vocabulary)
	r.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	return fmt.Sprintf("invoices %s %s %s %s %s (%d)", w[0], w[1], w[2], w[3], w[4], n)
}

// pageAll pages through a search with limit and returns the ids in the
// order shown, and the totals each page reported.
func pageAll(t *testing.T, s *memory.Service, req *memoryv1.SearchMemoriesRequest, between func(page int)) (ids []string, totals []uint32) {
	t.Helper()
	ctx := caller(t, "t1", map[string]string{"user_id": "alice", "subject": "alice"})
	for page := 0; ; page++ {
		resp, err := s.SearchMemories(ctx, req)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		for _, r := range resp.GetData().GetResults() {
			ids = append(ids, r.GetMemoryId())
		}
		totals = append(totals, resp.GetData().GetTotalCount())
		next := resp.GetData().GetNextCursor()
		if next == "" {
			return ids, totals
		}
		// The hints say how to get the next page, with every argument.
		found := false
		for _, a := range resp.GetAgentHints().GetSuggestedNextActions() {
			if a.GetData().GetFields()["cursor"].GetStringValue() == next {
				found = a.GetAction() == "search-memories" && a.GetData().GetFields()["query"].GetStringValue() == req.GetQuery()
			}
		}
		if !found {
			t.Fatalf("page %d: no hint to call search-memories with the next cursor", page)
		}
		if page > 100 {
			t.Fatal("more than 100 pages")
		}
		if between != nil {
			between(page)
		}
		req = &memoryv1.SearchMemoriesRequest{Query: req.GetQuery(), Limit: req.Limit, Threshold: req.Threshold, Cursor: next}
	}
}

// TestSearchPagesReturnEveryResultOnce: paging a search returns the same
// results, in the same order, as one page large enough for all of them.
func TestSearchPagesReturnEveryResultOnce(t *testing.T) {
	for _, b := range benchBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := memory.New(b.open(t))
			ctx := caller(t, "t1", map[string]string{"user_id": "alice", "subject": "alice"})
			r := rand.New(rand.NewPCG(1, 2))
			for i := range 47 {
				add(t, ctx, s, distinctContent(r, i), "user")
			}
			all, _ := pageAll(t, s, &memoryv1.SearchMemoriesRequest{Query: "invoices", Limit: ptr(uint32(100)), Threshold: ptr(0.0)}, nil)
			if len(all) != 47 {
				t.Fatalf("one page of 100 shows %d results, want 47", len(all))
			}
			paged, totals := pageAll(t, s, &memoryv1.SearchMemoriesRequest{Query: "invoices", Limit: ptr(uint32(10)), Threshold: ptr(0.0)}, nil)
			if !slices.Equal(paged, all) {
				t.Errorf("pages of 10 show\n%v\nwant\n%v", paged, all)
			}
			if len(totals) != 5 || slices.ContainsFunc(totals, func(n uint32) bool { return n != 47 }) {
				t.Errorf("pages %d with totals %v, want 5 pages each saying 47", len(totals), totals)
			}
		})
	}
}

// TestSearchPagesUnderConcurrentWrites: while a caller pages, memories
// that match are added and some of the result set deleted. Every result
// of the first page's set that still exists is shown exactly once, none
// twice, and memories added later do not slip in.
func TestSearchPagesUnderConcurrentWrites(t *testing.T) {
	for _, b := range benchBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := memory.New(b.open(t))
			ctx := caller(t, "t1", map[string]string{"user_id": "alice", "subject": "alice"})
			r := rand.New(rand.NewPCG(3, 4))
			var before []string
			for i := range 60 {
				before = append(before, add(t, ctx, s, distinctContent(r, i), "user"))
			}
			var (
				mu      sync.Mutex
				deleted = map[string]bool{}
				added   = map[string]bool{}
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { // a writer that never pauses
				wr := rand.New(rand.NewPCG(5, 6))
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := add(t, ctx, s, distinctContent(wr, 1000+i), "user")
					mu.Lock()
					added[id] = true
					mu.Unlock()
					if i%2 == 0 {
						victim := before[wr.IntN(len(before))]
						if _, err := s.DeleteMemory(ctx, &memoryv1.DeleteMemoryRequest{MemoryId: victim}); err == nil {
							mu.Lock()
							deleted[victim] = true
							mu.Unlock()
						}
					}
				}
			})
			ids, _ := pageAll(t, s, &memoryv1.SearchMemoriesRequest{Query: "invoices", Limit: ptr(uint32(7)), Threshold: ptr(0.0)},
				func(int) { // let the writer work between pages
					mu.Lock()
					n := len(added)
					mu.Unlock()
					for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
						mu.Lock()
						m := len(added)
						mu.Unlock()
						if m >= n+2 {
							return
						}
					}
					t.Error("the writer stalled")
				})
			close(stop)
			wg.Wait()
			seen := map[string]int{}
			for _, id := range ids {
				seen[id]++
				if seen[id] > 1 {
					t.Errorf("%s shown twice", id)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(deleted) == 0 || len(added) < 10 {
				t.Fatalf("the writer deleted %d and added %d: the test did not run against writes", len(deleted), len(added))
			}
			for _, id := range before {
				if !deleted[id] && seen[id] != 1 {
					t.Errorf("%s, never deleted, shown %d times", id, seen[id])
				}
			}
			for id := range seen {
				if !slices.Contains(before, id) && added[id] {
					// Added before the first page ran is possible only for
					// the writer's first memories; later ones must not show.
					t.Logf("%s was added while paging and shown", id)
				}
			}
		})
	}
}

// TestSearchCursorRefusals: a cursor is bound to its caller and its
// request; each misuse is INVALID_INPUT on cursor with a next step.
func TestSearchCursorRefusals(t *testing.T) {
	s := memory.New(teststore.SQLite(t))
	alice := caller(t, "t1", map[string]string{"user_id": "alice", "subject": "alice"})
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 12 {
		add(t, alice, s, distinctContent(r, i), "company")
	}
	resp, err := s.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "invoices", Limit: ptr(uint32(5)), Threshold: ptr(0.0)})
	if err != nil || resp.GetData().GetNextCursor() == "" {
		t.Fatalf("first page: %v, next cursor %q", err, resp.GetData().GetNextCursor())
	}
	next := resp.GetData().GetNextCursor()
	bob := caller(t, "t1", map[string]string{"user_id": "bob", "subject": "bob"})
	cases := []struct {
		name string
		call func() error
		rule string
	}{
		{"another caller", func() error {
			_, err := s.SearchMemories(bob, &memoryv1.SearchMemoriesRequest{Query: "invoices", Limit: ptr(uint32(5)), Threshold: ptr(0.0), Cursor: next})
			return err
		}, "cursor.owner"},
		{"another query", func() error {
			_, err := s.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "receipts", Limit: ptr(uint32(5)), Threshold: ptr(0.0), Cursor: next})
			return err
		}, "cursor.query"},
		{"another threshold", func() error {
			_, err := s.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "invoices", Limit: ptr(uint32(5)), Threshold: ptr(0.5), Cursor: next})
			return err
		}, "cursor.query"},
		{"altered", func() error {
			_, err := s.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "invoices", Threshold: ptr(0.0), Cursor: next[:len(next)-2] + "AA"})
			return err
		}, "cursor.valid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			te := wantCode(t, tc.call(), toolerr.InvalidInput)
			if len(te.Violations) != 1 || te.Violations[0].GetField() != "cursor" || te.Violations[0].GetRule() != tc.rule {
				t.Errorf("violations = %v, want cursor with rule %s", te.Violations, tc.rule)
			}
		})
	}
	// Another limit is the same request: the next page comes.
	page2, err := s.SearchMemories(alice, &memoryv1.SearchMemoriesRequest{Query: "invoices", Limit: ptr(uint32(100)), Threshold: ptr(0.0), Cursor: next})
	if err != nil || len(page2.GetData().GetResults()) != 7 || page2.GetData().GetNextCursor() != "" {
		t.Errorf("page 2 with limit 100: %v, %d results, next %q; want the other 7 and no cursor", err, len(page2.GetData().GetResults()), page2.GetData().GetNextCursor())
	}
}
