package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

// Benchmark corpus shape: one tenant, memories spread over ten users, five
// projects and the company layer, each 12-24 words drawn from a
// Zipf-distributed vocabulary of 5,000 synthetic words.
const (
	benchVocab     = 5000
	benchBatchSize = 2000
	// soakBatchSize is the transaction size of BenchmarkSearchCommonWords'
	// seeding. The soak grows the store one add (and commit) at a time,
	// and FTS5 writes an index segment per transaction: small
	// transactions give the index the shape the soak's searches see, at a
	// tenth of the commits.
	soakBatchSize = 10
)

var benchScopes = func() []store.Scope {
	var out []store.Scope
	for i := range 10 {
		out = append(out, store.Scope{Layer: store.LayerUser, ScopeID: fmt.Sprint("u", i)})
	}
	for i := range 5 {
		out = append(out, store.Scope{Layer: store.LayerProject, ScopeID: fmt.Sprint("p", i)})
	}
	return append(out, store.Scope{Layer: store.LayerCompany, ScopeID: "bench"})
}()

// benchWord returns the synthetic word of a vocabulary rank: pronounceable,
// distinct per rank, and no English stop word.
func benchWord(rank int) string {
	const cons, vows = "bcdfgklmnprstvz", "aeiou"
	var b strings.Builder
	for n := rank + len(cons)*len(vows); n > 0; n /= len(cons) * len(vows) {
		d := n % (len(cons) * len(vows))
		b.WriteByte(cons[d/len(vows)])
		b.WriteByte(vows[d%len(vows)])
	}
	b.WriteByte('x')
	return b.String()
}

func seedBench(b *testing.B, s store.Store, n int) {
	b.Helper()
	r := rand.New(rand.NewPCG(1, uint64(n)))
	zipf := rand.NewZipf(r, 1.07, 2, benchVocab-1)
	seedWith(b, s, n, benchBatchSize, func(int) *store.Memory {
		words := make([]string, 12+r.IntN(13))
		for j := range words {
			words[j] = benchWord(int(zipf.Uint64()))
		}
		sc := benchScopes[r.IntN(len(benchScopes))]
		return newMemory("bench", sc.Layer, sc.ScopeID, strings.Join(words, " "), fmt.Sprint("tag", r.IntN(20)))
	})
}

// seedWith adds the memories gen returns for 0..n-1, size to a
// transaction.
func seedWith(b *testing.B, s store.Store, n, size int, gen func(i int) *store.Memory) {
	b.Helper()
	batch := make([]*store.Memory, 0, size)
	flush := func() {
		var err error
		if bulk, ok := s.(store.MemoryBulkAdder); ok {
			err = bulk.AddMemories(b.Context(), batch)
		} else {
			for _, m := range batch {
				if err = s.AddMemory(b.Context(), m); err != nil {
					break
				}
			}
		}
		if err != nil {
			b.Fatalf("seeding: %v", err)
		}
		batch = batch[:0]
	}
	for i := range n {
		batch = append(batch, gen(i))
		if len(batch) == size || i == n-1 {
			flush()
		}
	}
}

// BenchmarkSearch measures SearchMemories on stores of 10k and 100k
// memories with typical queries: 2-5 words of mid to low frequency (ranks
// 20 and up; the most frequent words behave like stop words), three scopes,
// CandidateLimit 200. "newest" is the no-terms listing. Seeding is not
// timed. open must return a fresh store.
func BenchmarkSearch(b *testing.B, open func(tb testing.TB) store.Store) {
	for _, n := range []int{10_000, 100_000} {
		s := open(b)
		seedBench(b, s, n)
		r := rand.New(rand.NewPCG(7, 7))
		queries := make([]store.SearchQuery, 64)
		for i := range queries {
			terms := make([]string, 2+r.IntN(4))
			for j := range terms {
				terms[j] = benchWord(20 + r.IntN(benchVocab-20))
			}
			queries[i] = store.SearchQuery{Tenant: "bench", Terms: terms, CandidateLimit: 200,
				Scopes: []store.Scope{benchScopes[r.IntN(10)], benchScopes[10+r.IntN(5)], benchScopes[15]}}
		}
		run := func(name string, mutate func(q store.SearchQuery) store.SearchQuery) {
			b.Run(fmt.Sprintf("rows=%d/%s", n, name), func(b *testing.B) {
				b.ReportAllocs()
				matched, i := 0, 0
				for b.Loop() {
					res, err := s.SearchMemories(b.Context(), mutate(queries[i%len(queries)]))
					if err != nil {
						b.Fatal(err)
					}
					matched += res.Matched
					i++
				}
				b.ReportMetric(float64(matched)/float64(i), "matched/op")
			})
		}
		run("terms", func(q store.SearchQuery) store.SearchQuery { return q })
		run("terms+tag", func(q store.SearchQuery) store.SearchQuery { q.Tags = []string{"tag3"}; return q })
		run("newest", func(q store.SearchQuery) store.SearchQuery { q.Terms = nil; return q })
	}
}

// BenchmarkSearchCommonWords measures SearchMemories the way the soak test
// (internal/tests/reliability) searches: 200 users each add memories "load test
// memory <i> about <random word>" to their user layer and search "load
// test memory <3 random letters>" over their user, project and company
// layers. Every memory of the caller's scope matches (about 1 in 200 of
// the store) and the other scopes hold none, so the full-text walk
// skips over the other users' postings for each match. "soak" asks for 3
// of the 4 words, as search-memories does at its default threshold;
// "any" for any of them. Stores of 10k and 100k memories. A caller's
// matches (matched/op) grow with the store until they reach
// store.MatchedCap, and the cost of a search grows with them; what the
// benchmark compares is the cost per match.
func BenchmarkSearchCommonWords(b *testing.B, open func(tb testing.TB) store.Store) {
	const users = 200
	letters := func(r *rand.Rand, n int) string {
		w := make([]byte, n)
		for i := range w {
			w[i] = byte('a' + r.IntN(26))
		}
		return string(w)
	}
	for _, n := range []int{10_000, 100_000} {
		s := open(b)
		r := rand.New(rand.NewPCG(5, uint64(n)))
		seedWith(b, s, n, soakBatchSize, func(i int) *store.Memory {
			return newMemory("bench", store.LayerUser, fmt.Sprint("user", r.IntN(users)),
				fmt.Sprintf("load test memory %d about %s", i, letters(r, 14)))
		})
		queries := make([]store.SearchQuery, 64)
		for i := range queries {
			queries[i] = store.SearchQuery{Tenant: "bench", Terms: []string{"load", "test", "memory", letters(r, 3)},
				CandidateLimit: 200, Scopes: []store.Scope{{Layer: store.LayerUser, ScopeID: fmt.Sprint("user", r.IntN(users))},
					{Layer: store.LayerProject, ScopeID: "soak"}, {Layer: store.LayerCompany, ScopeID: "soak"}}}
		}
		for _, minMatch := range []struct {
			name string
			n    int
		}{{"soak", 3}, {"any", 0}} {
			b.Run(fmt.Sprintf("rows=%d/%s", n, minMatch.name), func(b *testing.B) {
				b.ReportAllocs()
				matched, i := 0, 0
				for b.Loop() {
					q := queries[i%len(queries)]
					q.MinMatch = minMatch.n
					res, err := s.SearchMemories(b.Context(), q)
					if err != nil {
						b.Fatal(err)
					}
					matched += res.Matched
					i++
				}
				b.ReportMetric(float64(matched)/float64(i), "matched/op")
			})
		}
	}
}

// BenchmarkAddMemory measures one durable AddMemory (one commit each).
func BenchmarkAddMemory(b *testing.B, open func(tb testing.TB) store.Store) {
	s := open(b)
	r := rand.New(rand.NewPCG(3, 3))
	b.ReportAllocs()
	for b.Loop() {
		words := make([]string, 16)
		for j := range words {
			words[j] = benchWord(r.IntN(benchVocab))
		}
		m := newMemory("bench", store.LayerUser, "u1", strings.Join(words, " "), "tag1", "tag2")
		if err := s.AddMemory(b.Context(), m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveResultPages measures saving one paged search's rest (80 KiB,
// about 1,500 results) by a caller already at its share, so that each save
// also drops the caller's oldest set: the steady state of a caller that
// floods searches.
func BenchmarkSaveResultPages(b *testing.B, open func(tb testing.TB) store.Store) {
	ps, ok := open(b).(store.PageStore)
	if !ok {
		b.Skip("the store keeps no result sets")
	}
	items := make([]byte, 80<<10)
	now := time.Now()
	save := func(i int) {
		p := &store.ResultPages{ID: fmt.Sprintf("rp_bench_%d", i), Tenant: "bench", Principal: "bench\x1fb", Query: "q",
			Items: items, CreatedAt: now, ExpiresAt: now.Add(15*time.Minute + time.Duration(i)*time.Microsecond)}
		if err := ps.SaveResultPages(b.Context(), p); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for ; i < store.PrincipalPagesShare/len(items)+1; i++ {
		save(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		save(i)
		i++
	}
}
