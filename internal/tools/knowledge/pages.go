package knowledge

import (
	"context"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/paging"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// A query's result set beyond its first page (paging.Save) is its
// matches in order, each an item id and its score. A later page looks
// each item up in the current knowledge set and leaves out an item that
// is gone, no longer visible to the caller or no longer passes the
// query's filters (a status changed by a sync): every other item of the
// set is shown exactly once, whatever a sync changes meanwhile.

// maxSet bounds the matches a result set keeps.
const maxSet = 4000

func queryFingerprint(req *knowledgev1.QueryKnowledgeRequest) string {
	return paging.Fingerprint(toolQuery, req, func(m proto.Message) {
		r := m.(*knowledgev1.QueryKnowledgeRequest)
		r.Cursor, r.Limit = "", nil
	})
}

func encodeMatches(rest []kb.Match, total int) []byte {
	b := paging.AppendUint(paging.AppendUint(make([]byte, 0, 8+len(rest)*48), total), len(rest))
	for _, m := range rest {
		b = paging.AppendFloat(paging.AppendString(b, m.Item.ID), m.Score)
	}
	return b
}

// savedMatch is one match of a saved result set.
type savedMatch struct {
	id    string
	score float64
}

func decodeMatches(b []byte) (ms []savedMatch, total int, err error) {
	r := paging.NewReader(b)
	total = r.Uint(math.MaxInt32)
	n := r.Uint(maxSet)
	ms = make([]savedMatch, 0, n)
	for range n {
		ms = append(ms, savedMatch{id: r.String(), score: r.Float()})
	}
	if r.Err() != nil {
		return nil, 0, r.Err()
	}
	return ms, total, nil
}

// firstPage runs the query and, when more items match than the limit and
// the store keeps result sets, saves the rest for the next page's cursor.
func (s *Service) firstPage(ctx context.Context, set *kb.Set, q kb.Query, caller scope.Caller, req *knowledgev1.QueryKnowledgeRequest) (
	matches []kb.Match, total int, next string, err error) {
	ps, _ := s.st.(store.PageStore)
	limit := q.Limit
	if ps != nil {
		q.Limit = maxSet
	}
	matches, total = set.Query(q)
	if len(matches) <= limit {
		return matches, total, "", nil
	}
	saved, err := paging.Save(ctx, ps, caller, queryFingerprint(req), encodeMatches(matches[limit:], total), time.Now())
	if err != nil {
		return nil, 0, "", scope.StoreError(err, "result set not saved", nil)
	}
	return matches[:limit], total, saved.Cursor(0), nil
}

// nextPage serves a page after the first from the query's saved result
// set: the items from the cursor's offset as the knowledge set has them
// now.
func (s *Service) nextPage(ctx context.Context, set *kb.Set, q kb.Query, caller scope.Caller, req *knowledgev1.QueryKnowledgeRequest) (
	matches []kb.Match, total int, next string, err error) {
	ps, ok := s.st.(store.PageStore)
	if !ok {
		return nil, 0, "", toolerr.Invalid("cursor", "cursor.valid", "this store keeps no result sets, so there is no next page: repeat the query without a cursor")
	}
	saved, offset, err := paging.Open(ctx, ps, req.GetCursor(), paging.Principal(caller), queryFingerprint(req), time.Now())
	if err != nil {
		return nil, 0, "", scope.StoreError(err, "result set not found", nil)
	}
	ms, total, err := decodeMatches(saved.Items)
	if err != nil || offset > len(ms) {
		return nil, 0, "", toolerr.Wrap(err, toolerr.Internal, "the saved result set of this cursor is damaged: repeat the query without a cursor")
	}
	i := offset
	for ; i < len(ms) && len(matches) < q.Limit; i++ {
		if it, ok := set.Get(ms[i].id); ok && q.Admits(it) {
			matches = append(matches, kb.Match{Item: it, Score: ms[i].score})
		}
	}
	if i < len(ms) {
		next = saved.Cursor(i)
	}
	return matches, total, next, nil
}
