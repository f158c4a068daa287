package memory

import (
	"context"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/memory/vecindex"
)

// RebuildIndex loads s's stored vectors into its index, as RunVectors does
// on start, and waits until the index's inverted files are trained.
func RebuildIndex(ctx context.Context, s *Service) error {
	if err := s.vec.rebuild(ctx); err != nil {
		return err
	}
	s.vec.index.Settle()
	return nil
}

// Indexed reports whether s's index holds a vector of the tenant's memory.
func Indexed(s *Service, tenant, id string) bool {
	_, ok := s.vec.index.Vector(tenant, id)
	return ok
}

// IndexRecall is the share of the exact k nearest vectors of each query,
// within the caller's scopes of tenant (user and project ids as given,
// and the company layer), that s's index returns.
func IndexRecall(ctx context.Context, s *Service, tenant string, ids map[store.Layer]string, queries []string, k int) (float64, error) {
	scopes := []vecindex.Scope{{Tenant: tenant, Layer: store.LayerCompany, ScopeID: tenant}}
	for l, id := range ids {
		scopes = append(scopes, vecindex.Scope{Tenant: tenant, Layer: l, ScopeID: id})
	}
	vecs, err := s.vec.emb.Embed(ctx, queries)
	if err != nil {
		return 0, err
	}
	found, total := 0, 0
	for _, q := range vecs {
		want := map[string]bool{}
		for _, h := range s.vec.index.SearchExact(q, scopes, k) {
			want[h.ID] = true
		}
		for _, h := range s.vec.index.Search(q, scopes, k) {
			if want[h.ID] {
				found++
			}
		}
		total += len(want)
	}
	if total == 0 {
		return 0, nil
	}
	return float64(found) / float64(total), nil
}
