package memory_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// Benchmark corpus: one tenant, memories spread over ten users, five
// projects and the company layer, 12-24 words each from a Zipf-distributed
// vocabulary of 5,000 synthetic words.
const benchVocab = 5000

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

func seed(b *testing.B, st store.Store, n int) {
	b.Helper()
	bulk, ok := st.(store.MemoryBulkAdder)
	if !ok {
		b.Fatal("store cannot bulk-add")
	}
	r := rand.New(rand.NewPCG(1, uint64(n)))
	zipf := rand.NewZipf(r, 1.07, 2, benchVocab-1)
	batch := make([]*store.Memory, 0, 2000)
	for i := range n {
		ws := make([]string, 12+r.IntN(13))
		for j := range ws {
			ws[j] = benchWord(int(zipf.Uint64()))
		}
		layer, scopeID := store.LayerUser, fmt.Sprint("u", r.IntN(10))
		switch r.IntN(4) {
		case 0:
			layer, scopeID = store.LayerProject, fmt.Sprint("p", r.IntN(5))
		case 1:
			layer, scopeID = store.LayerCompany, "bench"
		}
		batch = append(batch, &store.Memory{Tenant: "bench", Layer: layer, ScopeID: scopeID,
			Content: strings.Join(ws, " "), Tags: []string{fmt.Sprint("tag", r.IntN(20))}})
		if len(batch) == cap(batch) || i == n-1 {
			if err := bulk.AddMemories(b.Context(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// reportPercentiles reports the p50 and p99 of the measured latencies.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	b.Helper()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkSearchMemories measures search-memories (store query and
// ranking; not the interceptor chain) on 10k and 100k memories, with
// queries of 2-4 mid-frequency words over the user, project and company
// layers, threshold 0 so that every candidate is ranked.
func BenchmarkSearchMemories(b *testing.B) {
	for _, backend := range benchBackends(b) {
		for _, n := range []int{10_000, 100_000} {
			st := backend.open(b)
			seed(b, st, n)
			s := memory.New(st)
			r := rand.New(rand.NewPCG(7, 7))
			queries := make([]string, 64)
			for i := range queries {
				ws := make([]string, 2+r.IntN(3))
				for j := range ws {
					ws[j] = benchWord(20 + r.IntN(benchVocab-20))
				}
				queries[i] = strings.Join(ws, " ")
			}
			b.Run(fmt.Sprintf("%s/memories=%d", backend.name, n), func(b *testing.B) {
				ctx := caller(b, "bench", map[string]string{"user_id": "u3", "project_id": "p1"})
				var lat []time.Duration
				results, i := 0, 0
				b.ReportAllocs()
				for b.Loop() {
					start := time.Now()
					resp, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: queries[i%len(queries)], Threshold: ptr(0.0)})
					lat = append(lat, time.Since(start))
					if err != nil {
						b.Fatal(err)
					}
					results += len(resp.GetData().GetResults())
					i++
				}
				b.ReportMetric(float64(results)/float64(i), "results/op")
				reportPercentiles(b, lat)
			})
		}
	}
}

// BenchmarkAddMemory measures add-memory: the near-duplicate check and one
// durable insert.
func BenchmarkAddMemory(b *testing.B) {
	for _, backend := range benchBackends(b) {
		b.Run(backend.name, func(b *testing.B) {
			s := memory.New(backend.open(b))
			ctx := caller(b, "bench", map[string]string{"user_id": "u1"})
			r := rand.New(rand.NewPCG(3, 3))
			var lat []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				ws := make([]string, 16)
				for j := range ws {
					ws[j] = benchWord(r.IntN(benchVocab))
				}
				start := time.Now()
				if _, err := s.AddMemory(ctx, &memoryv1.AddMemoryRequest{Content: strings.Join(ws, " "), Tags: []string{"bench"}}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			reportPercentiles(b, lat)
		})
	}
}

// hashEmbedder is a cheap deterministic model for benchmarks: each word
// has a pseudo-random 256-dimension vector (seeded by its hash, kept once
// made), a text the sum of its words'. took records the time of the last
// call, so that benchmarks report embedding time apart.
type hashEmbedder struct {
	took  atomic.Int64
	words sync.Map // word -> []float32
}

func (e *hashEmbedder) Name() string { return "bench-hash-256" }

func (e *hashEmbedder) word(w string) []float32 {
	if v, ok := e.words.Load(w); ok {
		return v.([]float32)
	}
	h := fnv.New64a()
	h.Write([]byte(w))
	r := rand.New(rand.NewPCG(h.Sum64(), 1))
	v := make([]float32, 256)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	e.words.Store(w, v)
	return v
}

func (e *hashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	start := time.Now()
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 256)
		for _, w := range strings.Fields(t) {
			for j, x := range e.word(w) {
				v[j] += x
			}
		}
		out[i] = v
	}
	e.took.Store(int64(time.Since(start)))
	return out, nil
}

// seedVectors embeds every memory of st with emb and stores the vectors
// 1,000 to a transaction (the bulk path; the service's own filler writes
// 64 at a time, paced by the embeddings endpoint).
func seedVectors(b *testing.B, st store.Store, emb *hashEmbedder) {
	b.Helper()
	vs := st.(store.VectorStore)
	var cur store.VectorCursor
	for {
		ms, err := vs.PendingVectors(b.Context(), emb.Name(), cur, 1000)
		if err != nil {
			b.Fatal(err)
		}
		if len(ms) == 0 {
			return
		}
		cur = store.VectorCursor{Tenant: ms[len(ms)-1].Tenant, ID: ms[len(ms)-1].ID}
		texts := make([]string, len(ms))
		for i, m := range ms {
			texts[i] = m.Content
		}
		vecs, _ := emb.Embed(b.Context(), texts)
		rows := make([]store.MemoryVector, len(ms))
		for i, m := range ms {
			rows[i] = store.MemoryVector{Tenant: m.Tenant, ID: m.ID, Model: emb.Name(), Content: m.Content, Vec: vecs[i]}
		}
		if _, err := vs.SetVectors(b.Context(), rows); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchCacheEnv names a directory in which BenchmarkHybridSearchMemories
// keeps its seeded SQLite stores between runs, and PostgreSQL keeps them
// in schemas named bench_<directory's base name>_* of the test database
// (seeding 100k memories and their vectors takes minutes). Unset, the
// default, every run seeds a fresh store in a temporary directory. A kept
// store is reused only once its seeding finished; delete the directory
// (and drop those schemas) after changing the corpus, the model or the
// schema.
const benchCacheEnv = "TOOLSVC_BENCH_CACHE"

// openCached opens the store of backend named name: with benchCacheEnv
// set, the SQLite file kept there or the PostgreSQL schema kept in the
// test database, reporting whether it was seeded to the end by an earlier
// run; otherwise a fresh store.
func openCached(b *testing.B, backend benchBackend, name string) (store.Store, bool) {
	b.Helper()
	dir := os.Getenv(benchCacheEnv)
	switch {
	case dir == "":
		return backend.open(b), false
	case backend.name == "postgres":
		return teststore.PostgresKept(b, benchSchema(name))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, name+".db")
	_, err := os.Stat(path + ".seeded")
	if err != nil {
		// A store left by an interrupted seeding is started afresh.
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Remove(path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				b.Fatal(err)
			}
		}
	}
	st, openErr := sqlite.Open(b.Context(), path)
	if openErr != nil {
		b.Fatal(openErr)
	}
	b.Cleanup(func() { _ = st.Close() })
	return st, err == nil
}

// benchSchema is the PostgreSQL schema that keeps the store named name
// for the cache directory: bench_, the directory's base name and name, so
// two cache directories keep two stores (of two builds, say).
func benchSchema(name string) string {
	s := strings.ToLower(filepath.Base(os.Getenv(benchCacheEnv)) + "_" + name)
	return "bench_" + strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// markSeeded records that the kept store named name is fully seeded.
func markSeeded(b *testing.B, backend benchBackend, name string) {
	b.Helper()
	dir := os.Getenv(benchCacheEnv)
	switch {
	case dir == "":
		return
	case backend.name == "postgres":
		teststore.MarkPostgresSeeded(b, benchSchema(name))
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name+".db.seeded"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHybridSearchMemories measures search-memories with stored
// vectors (full-text candidates, the nearest 50 vectors of the caller's
// scopes, fusion) at 10k and 100k memories (1M with TOOLSVC_BENCH_1M=1),
// 256 dimensions, c=1. The memories and their vectors are seeded through
// the stores' bulk paths, then the index is rebuilt from the store as on
// start (its inverted files trained) before timing. p99-ms excludes the
// query's embedding, reported apart as embed-ms; seed-s and index-s are
// the set-up times; vec-recall@50 is the share of the exact 50 nearest
// vectors the index returned; cpu-ms is the process's CPU time per search
// (all goroutines, embedding included), steadier than latency on a busy
// machine. Each query runs once before timing (a running service's
// connections, statements and caches are warm); cold-p50-ms and
// cold-max-ms report that first pass. With TOOLSVC_BENCH_CACHE set to a
// directory, the seeded SQLite stores are kept there and reused (see
// benchCacheEnv); seed-s is then the time to open one.
func BenchmarkHybridSearchMemories(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if os.Getenv("TOOLSVC_BENCH_1M") != "" {
		sizes = append(sizes, 1_000_000)
	}
	r := rand.New(rand.NewPCG(7, 7))
	queries := make([]string, 64)
	for i := range queries {
		ws := make([]string, 2+r.IntN(3))
		for j := range ws {
			ws[j] = benchWord(20 + r.IntN(benchVocab-20))
		}
		queries[i] = strings.Join(ws, " ")
	}
	for _, backend := range benchBackends(b) {
		for _, n := range sizes {
			// The set-up runs inside the sub-benchmark (b.Loop runs its
			// function once), so -bench selects what is seeded.
			b.Run(fmt.Sprintf("%s/memories=%d", backend.name, n), func(b *testing.B) {
				emb := &hashEmbedder{}
				start := time.Now()
				st, cached := openCached(b, backend, fmt.Sprintf("hybrid-%s-%d", emb.Name(), n))
				if !cached {
					seed(b, st, n)
					seedVectors(b, st, emb)
					markSeeded(b, backend, fmt.Sprintf("hybrid-%s-%d", emb.Name(), n))
				}
				seeded := time.Since(start)
				start = time.Now()
				s := memory.New(st, memory.WithEmbedder(emb))
				if err := memory.RebuildIndex(b.Context(), s); err != nil {
					b.Fatal(err)
				}
				indexed := time.Since(start)
				ctx := caller(b, "bench", map[string]string{"user_id": "u3", "project_id": "p1"})
				// The first pass runs each query once, untimed by b.Loop: it
				// pays for what a running service has already (the pool's
				// connections and their prepared statements and plans, the
				// store's page caches). Its latencies are reported apart.
				cold := make([]time.Duration, 0, len(queries))
				for _, q := range queries {
					start := time.Now()
					if _, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: q, Threshold: ptr(0.0)}); err != nil {
						b.Fatal(err)
					}
					cold = append(cold, time.Since(start)-time.Duration(emb.took.Load()))
				}
				var lat []time.Duration
				var embed time.Duration
				i := 0
				cpu := testenv.ProcessCPU()
				for b.Loop() {
					start := time.Now()
					_, err := s.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: queries[i%len(queries)], Threshold: ptr(0.0)})
					took := time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					e := time.Duration(emb.took.Load())
					embed += e
					lat = append(lat, took-e)
					i++
				}
				cpu = testenv.ProcessCPU() - cpu
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(i), "cpu-ms")
				b.ReportMetric(float64(embed.Microseconds())/1000/float64(i), "embed-ms")
				b.ReportMetric(seeded.Seconds(), "seed-s")
				b.ReportMetric(indexed.Seconds(), "index-s")
				recall, err := memory.IndexRecall(b.Context(), s, "bench", map[store.Layer]string{store.LayerUser: "u3", store.LayerProject: "p1"}, queries, 50)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(recall, "vec-recall@50")
				reportPercentiles(b, lat)
				slices.Sort(cold)
				b.ReportMetric(float64(cold[len(cold)/2].Microseconds())/1000, "cold-p50-ms")
				b.ReportMetric(float64(cold[len(cold)-1].Microseconds())/1000, "cold-max-ms")
			})
		}
	}
}
