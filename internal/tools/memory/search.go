package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/toolsvc/toolsvc/internal/base/spans"
	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
)

// searchParams is what search-memories and summarize-memories share.
type searchParams struct {
	// tool is the tool searching (search-memories, summarize-memories),
	// for the errors' suggested next call.
	tool      string
	text      string
	layers    []string
	tags      []string
	threshold float64
}

// hit is one ranked memory.
type hit struct {
	m        store.Memory
	score    float64
	coverage float64
	stems    []words.Term // stemSet of the content
	// byText and byMeaning say which signals ranked the memory: the
	// full-text search (its words counted in the score), the nearest
	// vectors (or its similarity alone made the score).
	byText, byMeaning bool
	// light marks m as a light full-text candidate (store.SearchQuery.Light):
	// page reads its row in full if it is shown.
	light bool
	// fromSet marks a light hit of a saved result set (a cursor's page):
	// only its id is known until page reads its row.
	fromSet bool
}

// searchOutcome is a ranked search before the limit.
type searchOutcome struct {
	// floor is the embedder's similarity floor (Calibrated) a hybrid
	// search rescaled similarities above; 0 for none.
	floor float64
	// hits are above the threshold, near-duplicates removed, by layer
	// precedence then score.
	hits              []hit
	duplicates        []string
	searched, skipped []store.Layer
	explicit          bool
	q                 query
	// matched is the store's count of full-text matches; candidates how
	// many of them were ranked.
	matched, candidates int
	capped              bool
	hybrid              bool
	embedErr            error
	// model names the embedding model of a hybrid search over stored
	// vectors; empty when the candidates were embedded with the query.
	model string
	// unembedded counts full-text candidates without a stored vector yet.
	unembedded int
	// scopes and tags are the search's filters, which page checks the
	// rows it reads after the search against again.
	scopes []store.Scope
	tags   []string
}

// resolveLayers returns the layers to search: the requested ones (each must
// have its identifier), or every layer whose identifier is known.
func resolveLayers(caller scope.Caller, tool string, requested []string) (scopes []store.Scope, searched, skipped []store.Layer, err error) {
	if len(requested) == 0 {
		for _, l := range store.Layers {
			if id, ok := caller.ScopeID(l); ok {
				scopes = append(scopes, store.Scope{Layer: l, ScopeID: id})
				searched = append(searched, l)
			} else {
				skipped = append(skipped, l)
			}
		}
		return scopes, searched, skipped, nil
	}
	for i, name := range requested {
		l := store.Layer(name)
		if !l.Valid() {
			return nil, nil, nil, toolerr.Invalid(fmt.Sprintf("layers[%d]", i), "string.in", "%q is not a memory layer", name)
		}
		id, ok := caller.ScopeID(l)
		if !ok {
			return nil, nil, nil, caller.LayerError(tool, fmt.Sprintf("layers[%d]", i), l)
		}
		scopes = append(scopes, store.Scope{Layer: l, ScopeID: id})
		searched = append(searched, l)
	}
	slices.SortFunc(searched, func(a, b store.Layer) int { return cmp.Compare(a.Precedence(), b.Precedence()) })
	return scopes, searched, nil, nil
}

// search runs the ranking pipeline: full-text candidates from the store,
// Score for each, the threshold, near-duplicate removal, and ordering by
// layer precedence then score.
func (s *Service) search(ctx context.Context, caller scope.Caller, p searchParams) (searchOutcome, error) {
	scopes, searched, skipped, err := resolveLayers(caller, p.tool, p.layers)
	if err != nil {
		return searchOutcome{}, err
	}
	out := searchOutcome{searched: searched, skipped: skipped, explicit: len(p.layers) > 0, q: parseQuery(p.text),
		scopes: scopes, tags: p.tags}
	if len(out.q.words) == 0 {
		// Only stop words: an empty term list would mean "newest first"
		// to the store, which is not what was asked.
		return out, nil
	}
	// The nearest vectors need nothing of the full-text search: both run
	// at once, on two of the store's readers.
	var (
		near     nearResult
		nearDone chan struct{}
	)
	if s.vec != nil {
		nearDone = make(chan struct{})
		go func() {
			defer close(nearDone)
			near = s.vec.nearest(ctx, caller.Tenant, scopes, p.tags, p.text)
		}()
	}
	// A hybrid search ranks a few hundred candidates to show a page of
	// them: the store leaves their rows light, and page reads in full only
	// those shown (with stored vectors the store can read rows by id).
	tctx, span := spans.Start(ctx, "memory.full_text")
	res, err := s.st.SearchMemories(tctx, store.SearchQuery{
		Tenant: caller.Tenant, Terms: out.q.words, Scopes: scopes, Tags: p.tags, CandidateLimit: s.candidateLimit,
		MinMatch: minMatch(out.q, p.threshold, s.embedder != nil), Light: s.vec != nil,
	})
	if err != nil {
		spans.Fail(span, "store")
	} else if span.IsRecording() {
		span.SetAttributes(attribute.Int("toolsvc.memory.matched", res.Matched), attribute.Int("toolsvc.memory.candidates", len(res.Candidates)))
	}
	span.End()
	if nearDone != nil {
		<-nearDone
	}
	if err != nil {
		return searchOutcome{}, scope.StoreError(err, "memory not found", nil)
	}
	out.matched, out.capped, out.candidates = res.Matched, res.Capped, len(res.Candidates)
	out.floor = s.floor
	_, span = spans.Start(ctx, "memory.rank")
	defer span.End()

	maxRel := 0.0
	for _, c := range res.Candidates {
		maxRel = max(maxRel, c.Relevance)
	}
	cands := res.Candidates
	var (
		cos     []float64
		nearCos map[string]float64
	)
	if s.vec != nil {
		cands, cos, nearCos = s.hybridCandidates(ctx, caller.Tenant, res.Candidates, near, &out)
	} else {
		cos = s.similarities(ctx, p.text, res.Candidates, &out)
	}
	var hits []hit
	sets := stemSets(cands)
	for i, c := range cands {
		stems := sets[i]
		cov := coverage(out.q.stems, stems)
		var sc float64
		// wordsCount is false when the memory's words did not count in
		// its score (ScoreCalibrated: at most half the query's words).
		wordsCount := true
		if out.hybrid && s.floor > 0 {
			sc = ScoreCalibrated(cov, c.Relevance, maxRel, calibrate(cosAt(cos, i), s.floor))
			wordsCount = cov > minWordsCoverage
		} else {
			sc = Score(cov, c.Relevance, maxRel, cosAt(cos, i), out.hybrid)
		}
		if sc < p.threshold || sc == 0 {
			continue
		}
		_, byMeaning := nearCos[c.Memory.ID]
		byMeaning = byMeaning || (out.hybrid && s.vec == nil && cosAt(cos, i) > 0)
		fullText := i < len(res.Candidates)
		// The hints say which signals ranked the memory: one whose words
		// did not count was ranked by meaning alone (its score, above 0,
		// is its similarity above the floor), found by full text or not.
		byText := fullText && wordsCount
		byMeaning = byMeaning || !wordsCount
		hits = append(hits, hit{m: c.Memory, score: sc, coverage: cov, stems: stems,
			byText: byText, byMeaning: byMeaning, light: fullText && res.Light})
	}
	// The first of near-duplicates in this order wins: the one from the
	// higher-precedence layer, then the better-scored one.
	out.hits, out.duplicates = removeNearDuplicates(sortHits(hits))
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("toolsvc.memory.ranked", len(cands)), attribute.Int("toolsvc.memory.hits", len(out.hits)),
			attribute.Int("toolsvc.memory.duplicates", len(out.duplicates)))
	}
	return out, nil
}

// sortHits orders hits by layer precedence, then score, then newest, then
// id. It sorts their positions and moves each hit once: a hit is a few
// hundred bytes, and sorting the hits themselves copied them at every
// comparison and swap (a quarter of a millisecond for a full window's
// candidates).
func sortHits(hits []hit) []hit {
	order := make([]int, len(hits))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := &hits[i], &hits[j]
		if c := cmp.Compare(a.m.Layer.Precedence(), b.m.Layer.Precedence()); c != 0 {
			return c
		}
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := b.m.CreatedAt.Compare(a.m.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.m.ID, b.m.ID)
	})
	sorted := make([]hit, len(hits))
	for i, k := range order {
		sorted[i] = hits[k]
	}
	return sorted
}

// stemSets returns the stem set of each candidate's content. Many
// candidates (a full-text window's few hundred) are split in two halves,
// one on another goroutine: by the time the store answers, the
// nearest-vector lookup that ran beside it is done and a core is free, and
// the sets were a measurable part of such a search (measured:
// docs/BENCHMARKS.md, "Design measurements").
func stemSets(cands []store.Candidate) [][]words.Term {
	sets := make([][]words.Term, len(cands))
	fill := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			sets[i] = stemSet(cands[i].Memory.Content)
		}
	}
	if len(cands) < minParallelStems {
		fill(0, len(cands))
		return sets
	}
	half := len(cands) / 2
	var wg sync.WaitGroup
	wg.Go(func() { fill(0, half) })
	fill(half, len(cands))
	wg.Wait()
	return sets
}

// minParallelStems is the fewest candidates whose stem sets are worth a
// second goroutine: a set costs about what starting one does (measured:
// docs/BENCHMARKS.md, "Design measurements").
const minParallelStems = 64

// page returns the first limit hits, each with its memory in full. The
// rows of light hits are read now, at most limit at a time, from a later
// snapshot than the search's, and checked again against the search's
// filters: a memory deleted, moved out of the caller's scopes, orphaned,
// untagged or rewritten since the search is dropped from out.hits (and so
// from the count), and the next hit takes its place.
func (s *Service) page(ctx context.Context, tenant string, out *searchOutcome, limit int) (_ []hit, err error) {
	vs, _ := s.st.(store.VectorStore) // light hits come only from such a store
	ctx, span := spans.Start(ctx, "memory.page")
	read := 0
	defer func() {
		if err != nil {
			spans.Fail(span, "store")
		} else if span.IsRecording() {
			span.SetAttributes(attribute.Int("toolsvc.memory.rows_read", read))
		}
		span.End()
	}()
	want := make(map[store.Scope]bool, len(out.scopes))
	for _, sc := range out.scopes {
		want[sc] = true
	}
	for i := 0; i < min(limit, len(out.hits)); {
		end := min(limit, len(out.hits))
		var ids []string
		for _, h := range out.hits[i:end] {
			if h.light {
				ids = append(ids, h.m.ID)
			}
		}
		if len(ids) == 0 {
			break
		}
		var ms []store.Memory
		if ms, err = vs.GetMemories(ctx, tenant, ids); err != nil {
			return nil, err
		}
		read += len(ids)
		rows := make(map[string]store.Memory, len(ms))
		for _, m := range ms {
			rows[m.ID] = m
		}
		kept := out.hits[:i]
		for _, h := range out.hits[i:end] {
			if h.light {
				m, ok := rows[h.m.ID]
				if !ok || !want[store.Scope{Layer: m.Layer, ScopeID: m.ScopeID}] || m.Orphaned ||
					!hasAll(m.Tags, out.tags) || (!h.fromSet && m.Content != h.m.Content) {
					continue
				}
				h.m, h.light = m, false
			}
			kept = append(kept, h)
		}
		i = len(kept)
		out.hits = append(kept, out.hits[end:]...)
	}
	return out.hits[:min(limit, len(out.hits))], nil
}

// signals names what found a hit, for the hints.
func (x hit) signals() string {
	switch {
	case x.byText && x.byMeaning:
		return "matched by words and meaning"
	case x.byMeaning:
		return "matched by meaning"
	}
	return "matched by words"
}

// removeNearDuplicates keeps each hit that is no near-duplicate of an
// earlier kept one. A set of fewer than minNearSize stems can only be a
// near-duplicate of an identical set (one stem more or less already puts
// the similarity under duplicateJaccard), so those are matched by a
// signature lookup; only larger sets are compared pairwise, and only with
// kept sets of a size that allows the similarity. Each pair is first
// compared by a 64-bit mask of its terms' hashes (termMask): a bit set in
// one mask only comes from a term in one set only, so masks differing in
// more bits than the similarity allows rule the pair out at once (nearly
// every pair of unrelated sets); the rest are merged as two sorted lists
// that stop as soon as the pair can no longer reach duplicateJaccard
// (nearDuplicate). Merging every pair of compatible sizes took 410-470 us
// for a search's 250 candidates, with the masks 170-190 us
// (BenchmarkRemoveNearDuplicates).
func removeNearDuplicates(hits []hit) (kept []hit, dups []string) {
	exact := map[string]bool{}
	// large holds the kept large sets by size.
	type set struct {
		mask  uint64
		stems []words.Term
	}
	var large [][]set
	for _, h := range hits {
		var dup bool
		if len(h.stems) < minNearSize {
			sig := signature(h.stems)
			dup = exact[sig]
			exact[sig] = true
		} else {
			// One size more on each side than the ratio allows: rounding
			// must not skip a size nearDuplicate would accept.
			n, mask := len(h.stems), termMask(h.stems)
			for size := int(duplicateJaccard*float64(n)) - 1; size <= min(int(float64(n)/duplicateJaccard)+1, len(large)-1) && !dup; size++ {
				most := maxDifference(n + size)
				for _, k := range large[size] {
					if bits.OnesCount64(mask^k.mask) <= most && nearDuplicate(h.stems, k.stems) {
						dup = true
						break
					}
				}
			}
			if !dup {
				for len(large) <= n {
					large = append(large, nil)
				}
				large[n] = append(large[n], set{mask, h.stems})
			}
		}
		if dup {
			dups = append(dups, h.m.ID)
			continue
		}
		kept = append(kept, h)
	}
	return kept, dups
}

// termMask sets bit h mod 64 for the hash h of each term of set.
func termMask(set []words.Term) uint64 {
	var m uint64
	for _, t := range set {
		m |= 1 << (t.Hash & 63)
	}
	return m
}

// maxDifference bounds the terms in one of two sets only (their symmetric
// difference), for two sets of total sizes sum whose Jaccard reaches
// duplicateJaccard: the intersection i meets i >= t*(sum-i), so
// sum - 2i <= sum*(1-t)/(1+t); one more, so that rounding can only widen it.
func maxDifference(sum int) int {
	return int(float64(sum)*(1-duplicateJaccard)/(1+duplicateJaccard)) + 1
}

// signature is a stem set as one string, for equal sets only.
func signature(set []words.Term) string {
	var b strings.Builder
	for _, t := range set {
		b.WriteString(t.Stem)
		b.WriteByte(0)
	}
	return b.String()
}

// minNearSize is the smallest set that can be a near-duplicate of a
// different set: s/(s+1) >= duplicateJaccard.
var minNearSize = int(math.Ceil(duplicateJaccard / (1 - duplicateJaccard)))

// minMatch is the fewest query words a memory must contain to be able to
// reach threshold, so that the store does not fetch candidates that Score
// would drop: the smallest covered share of stems whose best possible
// score (full relevance, full similarity) reaches it, less one for each
// word whose stem another word shares (a covered stem may then match only
// one of its words in the store's own stemming).
func minMatch(q query, threshold float64, hybrid bool) int {
	n := len(q.stems)
	for c := 1; c <= n; c++ {
		if best := Score(float64(c)/float64(n), 1, 1, 1, hybrid); best >= threshold && best > 0 {
			return max(0, c-(len(q.words)-n))
		}
	}
	return 0
}

// similarities embeds the query and the candidates when an embedder is
// configured, returning cosine similarities by candidate index. On failure
// it records the error and returns nil: the search goes on lexically.
func (s *Service) similarities(ctx context.Context, text string, cands []store.Candidate, out *searchOutcome) []float64 {
	if s.embedder == nil || len(cands) == 0 {
		return nil
	}
	texts := make([]string, 0, len(cands)+1)
	texts = append(texts, text)
	for _, c := range cands {
		texts = append(texts, c.Memory.Content)
	}
	// The embeddings call gets at most half of the time left, so a slow
	// endpoint degrades the search to full text instead of timing it out.
	ectx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
		defer cancel()
	}
	vecs, err := s.embedder.Embed(ectx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("embeddings: got %d vectors for %d texts", len(vecs), len(texts))
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "embedder failed; searching by full text only", "error", err)
		}
		out.embedErr = err
		return nil
	}
	cos := make([]float64, len(cands))
	for i := range cands {
		cos[i] = cosine(vecs[0], vecs[i+1])
	}
	out.hybrid = true
	return cos
}

// hybridCandidates adds to the full-text candidates the memories nearest
// to the query in meaning (near, from the stored vectors), and returns the
// cosine similarity of each candidate (by index) and of each nearest
// memory (by id). A full-text candidate without a stored vector yet gets
// cosine 0. If near failed it records the error and returns the full-text
// candidates alone: the search goes on lexically.
func (s *Service) hybridCandidates(ctx context.Context, tenant string, lex []store.Candidate, near nearResult,
	out *searchOutcome) ([]store.Candidate, []float64, map[string]float64) {
	if near.err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "embedder failed; searching by full text only", "error", near.err)
		}
		out.embedErr = near.err
		return lex, nil, nil
	}
	out.hybrid, out.model = true, s.vec.model
	have := make(map[string]bool, len(lex))
	ids := make([]string, len(lex))
	for i, c := range lex {
		have[c.Memory.ID] = true
		ids[i] = c.Memory.ID
	}
	cos := make([]float64, len(lex), len(lex)+len(near.hits))
	embedded := 0
	s.vec.index.Visit(tenant, ids, func(i int, v []float32) {
		cos[i] = cosine(near.qv, v)
		embedded++
	})
	out.unembedded += len(lex) - embedded
	cands := slices.Grow(slices.Clip(lex), len(near.hits))
	for _, h := range near.hits {
		if have[h.m.ID] {
			continue
		}
		cands = append(cands, store.Candidate{Memory: h.m})
		cos = append(cos, h.cosine)
	}
	return cands, cos, near.cos
}

func cosAt(cos []float64, i int) float64 {
	if i < len(cos) {
		return cos[i]
	}
	return 0
}

func layerNames(ls []store.Layer) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

// SearchMemories ranks the caller's memories against a query; see Score
// for the relevance formula. Results are above threshold (default 0.7), by
// layer precedence then score, near-duplicates removed, at most limit
// (default 10); totalCount counts them before the limit.
func (s *Service) SearchMemories(ctx context.Context, req *memoryv1.SearchMemoriesRequest) (*memoryv1.SearchMemoriesResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	limit := DefaultLimit
	if req.Limit != nil {
		limit = int(req.GetLimit())
	}
	threshold := DefaultThreshold
	if req.Threshold != nil {
		threshold = req.GetThreshold()
	}
	if limit < 1 || limit > 100 {
		return nil, toolerr.Invalid("limit", "uint32.gte_lte", "must be between 1 and 100")
	}
	if threshold < 0 || threshold > 1 {
		return nil, toolerr.Invalid("threshold", "double.gte_lte", "must be between 0 and 1")
	}
	ps := s.pageStore()
	var (
		out   searchOutcome
		shown []hit
		total int
		next  string
	)
	if req.GetCursor() != "" {
		if ps == nil {
			return nil, toolerr.Invalid("cursor", "cursor.valid", "this store keeps no result sets, so there is no next page: repeat the search without a cursor")
		}
		if out, shown, total, next, err = s.nextPage(ctx, ps, caller, req, limit); err != nil {
			return nil, err
		}
	} else {
		if out, err = s.search(ctx, caller, searchParams{tool: toolSearch, text: req.GetQuery(), layers: req.GetLayers(), tags: req.GetTags(), threshold: threshold}); err != nil {
			return nil, err
		}
		if shown, err = s.page(ctx, caller.Tenant, &out, limit); err != nil {
			return nil, scope.StoreError(err, "memory not found", nil)
		}
		total = len(out.hits)
		if ps != nil && len(out.hits) > len(shown) {
			if next, err = s.saveRest(ctx, ps, caller, req, &out, len(shown)); err != nil {
				return nil, scope.StoreError(err, "result set not saved", nil)
			}
		}
	}
	results := make([]*memoryv1.MemoryResult, len(shown))
	for i, h := range shown {
		results[i] = &memoryv1.MemoryResult{
			Content:         h.m.Content,
			Layer:           string(h.m.Layer),
			Score:           h.score,
			MemoryId:        h.m.ID,
			Tags:            h.m.Tags,
			CreatedAt:       timestamppb.New(h.m.CreatedAt),
			SourceType:      h.m.SourceType,
			KnowledgeItemId: h.m.KnowledgeItemID,
		}
	}
	return &memoryv1.SearchMemoriesResponse{
		Data: &memoryv1.SearchMemoriesData{
			Success:           true,
			Results:           results,
			TotalCount:        uint32(total),
			SearchedLayers:    layerNames(out.searched),
			SkippedLayers:     layerNames(out.skipped),
			DuplicatesRemoved: uint32(len(out.duplicates)),
			NextCursor:        next,
		},
		AgentHints: searchHints(req, out, shown, threshold, total, next).Build(generatedBy + toolSearch),
	}, nil
}

// searchHints derives the hints of a search from what it saw.
func searchHints(req *memoryv1.SearchMemoriesRequest, out searchOutcome, shown []hit, threshold float64, total int, next string) *hints.Builder {
	h := hints.New().Validity(hints.ValidShort)
	commonHints(h, out)

	bestCoverage, meanScore := 0.0, 0.0
	for _, x := range shown {
		bestCoverage = max(bestCoverage, x.coverage)
		meanScore += x.score
	}
	if len(shown) > 0 {
		meanScore /= float64(len(shown))
	}
	h.Evidence(
		hints.Evidence{Name: "query terms covered by the best result", Value: bestCoverage, Weight: 1},
		hints.Evidence{Name: "mean score of the results", Value: meanScore, Weight: 1},
		hints.Evidence{Name: "layers searched of all layers", Value: float64(len(out.searched)) / float64(len(store.Layers)), Weight: 0.5},
	)
	// Results that share no word with the query stand on the model's
	// judgement alone: unless they score high, their confidence is low.
	meaningOnly := len(shown) > 0
	for _, x := range shown {
		meaningOnly = meaningOnly && x.byMeaning && !x.byText
	}
	if out.hybrid {
		only := 0.0
		if meaningOnly {
			only = 1
		}
		h.Evidence(hints.Evidence{Name: "results found by meaning alone (no shared word)", Value: only, Weight: 0.5})
	}
	switch {
	case len(shown) == 0, meaningOnly && meanScore < 0.85:
		h.Quality(hints.QualityLow)
	case meanScore >= 0.85:
		h.Quality(hints.QualityHigh)
	default:
		h.Quality(hints.QualityMedium)
	}

	for _, x := range shown {
		var md *toolsvcv1.ResourceMetadata
		if out.hybrid {
			md = &toolsvcv1.ResourceMetadata{Category: x.signals()}
		}
		h.Related("memory", x.m.ID, label(x.m.Content), x.score, md)
	}
	if out.hybrid {
		both, meaning, text := 0, 0, 0
		for _, x := range shown {
			switch {
			case x.byText && x.byMeaning:
				both++
			case x.byMeaning:
				meaning++
			default:
				text++
			}
		}
		h.Assume(fmt.Sprintf("Of the %d results shown, %d matched by words and meaning, %d by meaning only (no shared word needed), %d by words only.",
			len(shown), both, meaning, text))
	}
	seenItems := map[string]bool{}
	for _, x := range shown {
		if id := x.m.KnowledgeItemID; id != "" && !seenItems[id] {
			seenItems[id] = true
			h.Related("knowledge-item", id, "", x.score, nil)
			if len(seenItems) == 1 {
				h.Next("show-knowledge", hints.Medium, "Read the knowledge item this memory points at.",
					hints.WithArgs(map[string]any{"id": id}), hints.WithCategory("exploration"))
			}
		}
	}

	if len(shown) == 0 {
		if threshold > 0.3 {
			lower := round4(max(0.3, threshold-0.2))
			h.Next(toolSearch, hints.High, "Nothing reached the threshold: search again with a lower threshold.",
				hints.WithArgs(map[string]any{"query": req.GetQuery(), "threshold": lower}),
				hints.WithCategory("exploration"), hints.WithOutcome("Weaker matches are returned."))
		}
		if out.explicit || len(req.GetTags()) > 0 {
			h.Next(toolSearch, hints.Medium, "Broaden the search to every known layer and drop the tag filter.",
				hints.WithArgs(map[string]any{"query": req.GetQuery()}), hints.WithCategory("exploration"))
		}
		h.Next(toolAdd, hints.Low, "If this is new information worth keeping, store it.", hints.WithCategory("learning"))
		h.Impact(0.2, 0.2, "recall")
		h.Reason("No memory scored at least %.2f for %q in layers %s (%d full-text matches ranked).",
			threshold, req.GetQuery(), strings.Join(layerNames(out.searched), ", "), out.candidates)
	} else {
		h.Next(toolSummarize, hints.Low, "Summarize what these memories say, with quotes.",
			hints.WithArgs(map[string]any{"query": req.GetQuery()}), hints.WithCategory("exploration"))
		h.Impact(meanScore, 0.1, "recall")
		h.Reason("%d of %d matching memories shown, by layer precedence then score (mean %.2f); threshold %.2f.",
			len(shown), total, meanScore, threshold)
	}
	if next != "" {
		h.Next(toolSearch, hints.Medium, "More results exist: call search-memories again with the same arguments and this cursor for the next page.",
			hints.WithArgs(nextPageArgs(req, next)), hints.WithCategory("exploration"),
			hints.WithOutcome("The next results of the same result set, none repeated."))
	}
	layersSeen := map[store.Layer]bool{}
	for _, x := range shown {
		layersSeen[x.m.Layer] = true
	}
	if len(layersSeen) > 1 {
		h.Risk("accuracy", hints.Low, "Results come from several layers and may disagree.", 0.3, 0.4,
			"Prefer the earlier result: layers are ordered by precedence (agent first).")
	}
	return h
}

// commonHints records what search and summarize share: skipped layers,
// removed duplicates, ranking assumptions and degraded modes.
func commonHints(h *hints.Builder, out searchOutcome) {
	for _, l := range out.skipped {
		h.NeedContext(scope.Missing(l))
	}
	if n := len(out.duplicates); n > 0 {
		h.Warn("duplicate", hints.Low, fmt.Sprintf("%d near-duplicate memories were removed from the results", n),
			"delete-memory the redundant copies", out.duplicates...)
	}
	if len(out.q.words) == 0 {
		h.Warn("validation", hints.Medium, "the query has no content words (only stop words or one-letter words)",
			"ask with the key words of what you want to recall")
	}
	switch {
	case out.hybrid && out.model != "":
		h.Assume(fmt.Sprintf("Search was hybrid: full-text matches and the %d memories nearest in meaning (embedding model %q) were ranked; "+
			"score = 1 - (1 - embedding similarity) x (1 - lexical), where lexical blends query-word coverage (75%%) with full-text relevance (25%%).",
			vectorCandidates, out.model))
	case out.hybrid:
		h.Assume("Search was hybrid over the full-text candidates: score = 1 - (1 - embedding similarity) x (1 - lexical), " +
			"where lexical blends query-word coverage (75%) with full-text relevance (25%).")
	}
	if out.hybrid && out.floor > 0 {
		h.Assume(fmt.Sprintf("The embedding similarity was rescaled above the model's similarity floor %.2f (what unrelated texts reach): "+
			"similarity = (cosine - %.2f) / (1 - %.2f), 0 below it; a memory containing at most half of the query's content words "+
			"scored its similarity alone (its words did not count).", out.floor, out.floor, out.floor))
	}
	if !out.hybrid {
		h.Assume("Search was lexical: scores blend query-word coverage (75%) with full-text relevance normalised within the candidates (25%); " +
			"with an embeddings provider configured, memories are also found by meaning.")
	}
	if out.unembedded > 0 {
		h.Assume(fmt.Sprintf("%d full-text matches have no vector yet (they are embedded in the background) and were ranked by their words only.", out.unembedded))
	}
	if out.embedErr != nil {
		h.Warn("performance", hints.Medium, "the embeddings endpoint failed; results are ranked by full text only",
			"check the embeddings server")
	}
	switch {
	case out.capped:
		h.Assume(fmt.Sprintf("More than %d memories matched: only the newest %d were considered, and the %d best of them ranked; "+
			"more specific words, tags or layers narrow the search.", out.matched, out.matched, out.candidates))
	case out.matched > out.candidates:
		h.Assume(fmt.Sprintf("Only the %d best full-text matches of %d were ranked.", out.candidates, out.matched))
	}
}

// nextPageArgs are the arguments of the next page: the request's own,
// with the cursor.
func nextPageArgs(req *memoryv1.SearchMemoriesRequest, cursor string) map[string]any {
	args := map[string]any{"query": req.GetQuery(), "cursor": cursor}
	list := func(ss []string) []any {
		out := make([]any, len(ss))
		for i, s := range ss {
			out[i] = s
		}
		return out
	}
	if len(req.GetLayers()) > 0 {
		args["layers"] = list(req.GetLayers())
	}
	if len(req.GetTags()) > 0 {
		args["tags"] = list(req.GetTags())
	}
	if req.Limit != nil {
		args["limit"] = req.GetLimit()
	}
	if req.Threshold != nil {
		args["threshold"] = req.GetThreshold()
	}
	return args
}
