package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

var _ store.KnowledgeVersionStore = (*Store)(nil)

// KnowledgeVersion implements store.KnowledgeVersionStore.
func (s *Store) KnowledgeVersion(ctx context.Context) (store.KnowledgeVersion, error) {
	leave, err := s.readTurn(ctx, "KnowledgeVersion")
	if err != nil {
		return store.KnowledgeVersion{}, err
	}
	defer leave()
	return s.knowledgeVersion(ctx, s.reader, "KnowledgeVersion")
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) knowledgeVersion(ctx context.Context, q queryRower, op string) (store.KnowledgeVersion, error) {
	var (
		v  store.KnowledgeVersion
		at int64
	)
	err := q.QueryRowContext(ctx, `SELECT version, digest, published_at FROM knowledge_version WHERE id = 1`).
		Scan(&v.Version, &v.Digest, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return store.KnowledgeVersion{}, nil
	}
	if err != nil {
		return store.KnowledgeVersion{}, s.fail(ctx, op, err)
	}
	v.At = backend.FromMicros(at)
	return v, nil
}

// PublishKnowledge implements store.KnowledgeVersionStore, inside the
// writer's IMMEDIATE transaction, so concurrent publishers (in any
// process) take turns.
func (s *Store) PublishKnowledge(ctx context.Context, digest string) (store.KnowledgeVersion, error) {
	var out store.KnowledgeVersion
	err := s.writeTx(ctx, "PublishKnowledge", func(tx *sql.Tx) error {
		cur, err := s.knowledgeVersion(ctx, tx, "PublishKnowledge")
		if err != nil {
			return err
		}
		if cur.Version > 0 && cur.Digest == digest {
			out = cur
			return nil
		}
		now := backend.Now()
		out = store.KnowledgeVersion{Version: cur.Version + 1, Digest: digest, At: now}
		_, err = tx.ExecContext(ctx, `INSERT INTO knowledge_version (id, version, digest, published_at) VALUES (1, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET version = excluded.version, digest = excluded.digest, published_at = excluded.published_at`,
			out.Version, digest, now.UnixMicro())
		return s.fail(ctx, "PublishKnowledge", err)
	})
	return out, err
}
