package memory

import (
	"context"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/paging"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
)

// A search's result set beyond its first page (paging.Save) is its hits
// in order: for each, the memory id, score, word coverage and the
// signals that found it. A later page reads the rows of the hits it
// shows by id, leaving out memories deleted, moved out of the caller's
// layers or re-tagged since: every other hit of the set is shown exactly
// once, whatever is written meanwhile.

// pageStore is the store's PageStore when it can serve later pages (it
// keeps result sets and reads memories by id), else nil.
func (s *Service) pageStore() store.PageStore {
	ps, ok := s.st.(store.PageStore)
	if _, byID := s.st.(store.VectorStore); !ok || !byID {
		return nil
	}
	return ps
}

// searchFingerprint identifies what a search asks apart from its cursor
// and limit: a cursor works only for the same request.
func searchFingerprint(req *memoryv1.SearchMemoriesRequest) string {
	return paging.Fingerprint(toolSearch, req, func(m proto.Message) {
		r := m.(*memoryv1.SearchMemoriesRequest)
		r.Cursor, r.Limit = "", nil
	})
}

const (
	flagText    = 1 << 0
	flagMeaning = 1 << 1
	flagHybrid  = 1 << 0 // of the set's header
)

// encodeSet encodes the hits after the first page, with the search's
// total and whether it was hybrid.
func encodeSet(rest []hit, total int, hybrid bool) []byte {
	var head byte
	if hybrid {
		head |= flagHybrid
	}
	b := append(make([]byte, 0, 8+len(rest)*56), head)
	b = paging.AppendUint(paging.AppendUint(b, total), len(rest))
	for _, h := range rest {
		b = paging.AppendFloat(paging.AppendFloat(paging.AppendString(b, h.m.ID), h.score), h.coverage)
		var f byte
		if h.byText {
			f |= flagText
		}
		if h.byMeaning {
			f |= flagMeaning
		}
		b = append(b, f)
	}
	return b
}

// decodeSet reverses encodeSet; the hits are light (their rows are read
// when shown) and from the set (their content is not known yet).
func decodeSet(b []byte) (hits []hit, total int, hybrid bool, err error) {
	r := paging.NewReader(b)
	hybrid = r.Byte()&flagHybrid != 0
	total = r.Uint(math.MaxInt32)
	n := r.Uint(store.MatchedCap * 4)
	hits = make([]hit, 0, n)
	for range n {
		h := hit{m: store.Memory{ID: r.String()}, light: true, fromSet: true, score: r.Float(), coverage: r.Float()}
		f := r.Byte()
		h.byText, h.byMeaning = f&flagText != 0, f&flagMeaning != 0
		hits = append(hits, h)
	}
	if r.Err() != nil {
		return nil, 0, false, r.Err()
	}
	return hits, total, hybrid, nil
}

// saveRest keeps the hits after the first page and returns the cursor of
// the next page.
func (s *Service) saveRest(ctx context.Context, ps store.PageStore, caller scope.Caller, req *memoryv1.SearchMemoriesRequest,
	out *searchOutcome, shown int) (string, error) {
	set, err := paging.Save(ctx, ps, caller, searchFingerprint(req),
		encodeSet(out.hits[shown:], len(out.hits), out.hybrid), time.Now())
	if err != nil {
		return "", err
	}
	return set.Cursor(0), nil
}

// nextPage serves a page after the first from the search's saved result
// set: the hits from the cursor's offset, their rows read by id.
func (s *Service) nextPage(ctx context.Context, ps store.PageStore, caller scope.Caller, req *memoryv1.SearchMemoriesRequest,
	limit int) (out searchOutcome, shown []hit, total int, next string, err error) {
	set, offset, err := paging.Open(ctx, ps, req.GetCursor(), paging.Principal(caller), searchFingerprint(req), time.Now())
	if err != nil {
		return out, nil, 0, "", scope.StoreError(err, "result set not found", nil)
	}
	hits, total, hybrid, err := decodeSet(set.Items)
	if err != nil || offset > len(hits) {
		return out, nil, 0, "", toolerr.Wrap(err, toolerr.Internal, "the saved result set of this cursor is damaged: repeat the search without a cursor")
	}
	scopes, searched, skipped, err := resolveLayers(caller, toolSearch, req.GetLayers())
	if err != nil {
		return out, nil, 0, "", err
	}
	out = searchOutcome{searched: searched, skipped: skipped, explicit: len(req.GetLayers()) > 0, q: parseQuery(req.GetQuery()),
		scopes: scopes, tags: req.GetTags(), hybrid: hybrid, hits: hits[offset:]}
	before := len(out.hits)
	if shown, err = s.page(ctx, caller.Tenant, &out, limit); err != nil {
		return out, nil, 0, "", scope.StoreError(err, "memory not found", nil)
	}
	// page drops the hits whose memory is gone from the ones it read: all
	// it read are now shown or dropped.
	if end := offset + before - len(out.hits) + len(shown); end < len(hits) {
		next = set.Cursor(end)
	}
	return out, shown, total, next, nil
}
