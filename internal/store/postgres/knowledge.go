package postgres

import (
	"context"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ store.KnowledgeVersionStore = (*Store)(nil)

// KnowledgeVersion implements store.KnowledgeVersionStore.
func (s *Store) KnowledgeVersion(ctx context.Context) (store.KnowledgeVersion, error) {
	var v store.KnowledgeVersion
	err := s.pool.QueryRow(ctx, `SELECT version, digest, published_at FROM knowledge_version`).Scan(&v.Version, &v.Digest, &v.At)
	if noRows(err) {
		return store.KnowledgeVersion{}, nil
	}
	if err != nil {
		return store.KnowledgeVersion{}, s.fail(ctx, "KnowledgeVersion", err)
	}
	v.At = backend.Normalize(v.At)
	return v, nil
}

// PublishKnowledge implements store.KnowledgeVersionStore in one
// statement: the upsert's row lock orders concurrent publishers, and a
// digest equal to the current one leaves the row as it is.
func (s *Store) PublishKnowledge(ctx context.Context, digest string) (store.KnowledgeVersion, error) {
	now := backend.Now()
	var v store.KnowledgeVersion
	err := s.pool.QueryRow(ctx, `INSERT INTO knowledge_version AS k (id, version, digest, published_at) VALUES (true, 1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET version = k.version + 1, digest = excluded.digest, published_at = excluded.published_at
			WHERE k.digest <> excluded.digest
		RETURNING version, digest, published_at`, digest, now).Scan(&v.Version, &v.Digest, &v.At)
	if noRows(err) {
		// The digest is already current.
		return s.KnowledgeVersion(ctx)
	}
	if err != nil {
		return store.KnowledgeVersion{}, s.fail(ctx, "PublishKnowledge", err)
	}
	v.At = backend.Normalize(v.At)
	return v, nil
}
