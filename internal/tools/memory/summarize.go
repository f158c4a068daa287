package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"

	"github.com/toolsvc/toolsvc/internal/contract/hints"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
)

// sentence is a span of a memory's content.
type sentence struct {
	start, end int // byte offsets into the content; content[start:end] is the sentence
}

// sentences splits content at '.', '!' or '?' followed by white space or
// the end, and at line breaks, trimming white space. Offsets refer to
// content, so every sentence is a verbatim substring of it.
func sentences(content string) []sentence {
	var out []sentence
	start := 0
	emit := func(end int) {
		s, e := start, end
		for s < e && asciiSpace(content[s]) {
			s++
		}
		for e > s && asciiSpace(content[e-1]) {
			e--
		}
		if e > s {
			out = append(out, sentence{start: s, end: e})
		}
	}
	for i := 0; i < len(content); i++ {
		switch c := content[i]; {
		case c == '\n':
			emit(i)
			start = i + 1
		case (c == '.' || c == '!' || c == '?') && (i+1 == len(content) || asciiSpace(content[i+1])):
			emit(i + 1)
			start = i + 1
		}
	}
	emit(len(content))
	return out
}

// asciiSpace reports ASCII white space. Spans are cut only at ASCII bytes,
// which never occur inside a multi-byte UTF-8 sequence, so every sentence
// stays valid UTF-8.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// normalizeClaim collapses runs of white space: a light normalisation that
// never adds a word.
func normalizeClaim(s string) string { return strings.Join(strings.Fields(s), " ") }

// grounded reports whether a bullet is grounded in content: the evidence is
// a verbatim substring, and every word of the claim appears in the
// evidence.
func grounded(b *memoryv1.SummaryBullet, content string) bool {
	if b.GetEvidence() == "" || !strings.Contains(content, b.GetEvidence()) {
		return false
	}
	ev := map[string]bool{}
	for _, w := range strings.Fields(b.GetEvidence()) {
		ev[w] = true
	}
	for _, w := range strings.Fields(b.GetClaim()) {
		if !ev[w] {
			return false
		}
	}
	return true
}

type candidateBullet struct {
	bullet   *memoryv1.SummaryBullet
	coverage float64 // share of query stems in the sentence
	score    float64 // score of the source memory
	order    int     // position of the sentence among all candidates
}

// SummarizeMemories builds an extractive summary of the memories matching
// a query (threshold default 0.5): their sentences that contain a query
// word, best covered first, at most maxBullets (default 5). Each bullet's
// evidence is a verbatim substring of its memory, and its claim the same
// sentence with white space collapsed; both are verified before returning
// and a bullet that fails is dropped and reported in the hints. A query
// that matches nothing gives no bullets.
func (s *Service) SummarizeMemories(ctx context.Context, req *memoryv1.SummarizeMemoriesRequest) (*memoryv1.SummarizeMemoriesResponse, error) {
	caller, err := scope.FromContext(ctx)
	if err != nil {
		return nil, err
	}
	maxBullets := DefaultMaxBullets
	if req.MaxBullets != nil {
		maxBullets = int(req.GetMaxBullets())
	}
	threshold := DefaultSummaryThreshold
	if req.Threshold != nil {
		threshold = req.GetThreshold()
	}
	if maxBullets < 1 || maxBullets > 20 {
		return nil, toolerr.Invalid("maxBullets", "uint32.gte_lte", "must be between 1 and 20")
	}
	if threshold < 0 || threshold > 1 {
		return nil, toolerr.Invalid("threshold", "double.gte_lte", "must be between 0 and 1")
	}
	out, err := s.search(ctx, caller, searchParams{tool: toolSummarize, text: req.GetQuery(), layers: req.GetLayers(), threshold: threshold})
	if err != nil {
		return nil, err
	}
	// Summaries follow relevance, not layer precedence.
	sources := slices.Clone(out.hits)
	slices.SortStableFunc(sources, func(a, b hit) int { return cmp.Compare(b.score, a.score) })
	if len(sources) > summarySourceMemories {
		sources = sources[:summarySourceMemories]
	}
	contentOf := map[string]string{}
	var cands []candidateBullet
	for _, src := range sources {
		contentOf[src.m.ID] = src.m.Content
		for _, sen := range sentences(src.m.Content) {
			text := src.m.Content[sen.start:sen.end]
			cov := coverage(out.q.stems, stemSet(text))
			if cov == 0 {
				continue
			}
			cands = append(cands, candidateBullet{
				bullet:   &memoryv1.SummaryBullet{Claim: normalizeClaim(text), Evidence: text, MemoryId: src.m.ID},
				coverage: cov, score: src.score, order: len(cands),
			})
		}
	}
	slices.SortStableFunc(cands, func(a, b candidateBullet) int {
		return cmp.Or(cmp.Compare(b.coverage, a.coverage), cmp.Compare(b.score, a.score), cmp.Compare(a.order, b.order))
	})

	var (
		bullets  []*memoryv1.SummaryBullet
		dropped  []string
		seen     = map[string]bool{}
		coverSum float64
	)
	for _, c := range cands {
		if len(bullets) == maxBullets {
			break
		}
		key := strings.ToLower(c.bullet.GetClaim())
		if seen[key] {
			continue // the same sentence in two memories says one thing
		}
		if !grounded(c.bullet, contentOf[c.bullet.GetMemoryId()]) {
			dropped = append(dropped, c.bullet.GetMemoryId())
			continue
		}
		seen[key] = true
		bullets = append(bullets, c.bullet)
		coverSum += c.coverage
	}

	h := hints.New().Validity(hints.ValidShort)
	commonHints(h, out)
	if len(dropped) > 0 {
		h.Warn("validation", hints.High, fmt.Sprintf("%d bullet(s) failed the grounding check and were dropped", len(dropped)),
			"", dropped...)
	}
	grounding := 1.0
	if n := len(bullets) + len(dropped); n > 0 {
		grounding = float64(len(bullets)) / float64(n)
	}
	meanCover, meanScore := 0.0, 0.0
	if len(bullets) > 0 {
		meanCover = coverSum / float64(len(bullets))
	}
	for _, src := range sources {
		meanScore += src.score
	}
	if len(sources) > 0 {
		meanScore /= float64(len(sources))
	}
	h.Evidence(
		hints.Evidence{Name: "bullets that passed the grounding check", Value: grounding, Weight: 1},
		hints.Evidence{Name: "query words covered by the bullets", Value: meanCover, Weight: 1},
		hints.Evidence{Name: "mean score of the source memories", Value: meanScore, Weight: 1},
	)
	cited := map[string]bool{}
	for _, b := range bullets {
		if !cited[b.GetMemoryId()] {
			cited[b.GetMemoryId()] = true
			for _, src := range sources {
				if src.m.ID == b.GetMemoryId() {
					h.Related("memory", src.m.ID, label(src.m.Content), src.score, nil)
				}
			}
		}
	}
	h.Assume("The summary is extractive: every bullet quotes its memory verbatim and says nothing the memories do not.")
	if len(bullets) == 0 {
		h.Quality(hints.QualityLow).Impact(0.1, 0.2, "recall").
			Reason("No sentence of a memory scoring at least %.2f contains a word of %q.", threshold, req.GetQuery())
		if threshold > 0.2 {
			h.Next(toolSummarize, hints.Medium, "Nothing matched: summarize with a lower threshold.",
				hints.WithArgs(map[string]any{"query": req.GetQuery(), "threshold": round4(max(0.2, threshold-0.2))}),
				hints.WithCategory("exploration"))
		}
		h.Next(toolSearch, hints.Low, "Search with other words to find what is remembered.",
			hints.WithArgs(map[string]any{"query": req.GetQuery(), "threshold": 0.3}), hints.WithCategory("exploration"))
	} else {
		q := hints.QualityMedium
		if grounding == 1 && meanScore >= 0.85 {
			q = hints.QualityHigh
		}
		h.Quality(q).Impact(meanCover, 0.1, "recall").
			Reason("%d grounded bullet(s) from %d memories matching %q.", len(bullets), len(cited), req.GetQuery())
		h.Next(toolSearch, hints.Low, "See the full memories behind the bullets.",
			hints.WithArgs(map[string]any{"query": req.GetQuery(), "threshold": threshold}), hints.WithCategory("exploration"))
	}
	if bullets == nil {
		bullets = []*memoryv1.SummaryBullet{}
	}
	return &memoryv1.SummarizeMemoriesResponse{
		Data: &memoryv1.SummarizeMemoriesData{
			Type:               "summary",
			Bullets:            bullets,
			MemoriesConsidered: uint32(len(out.hits)),
			SearchedLayers:     layerNames(out.searched),
		},
		AgentHints: h.Build(generatedBy + toolSummarize),
	}, nil
}
