package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// SearchGIN is SearchMemories through the GIN index whatever the search,
// the way token groups and tag filters go: tests compare the scoped term
// lists with it.
func (s *Store) SearchGIN(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	return s.search(ctx, q, func(backend.Search) bool { return false }, nil)
}

// SearchBetween is SearchMemories (through the GIN index when gin is
// set) with between called after the window is read and before the best
// memories are.
func (s *Store) SearchBetween(ctx context.Context, q store.SearchQuery, gin bool, between func()) (store.SearchResult, error) {
	return s.search(ctx, q, func(sq backend.Search) bool { return !gin && termLists(sq) }, between)
}

// UsesTermLists reports whether SearchMemories reads the scoped term lists
// for q.
func UsesTermLists(q store.SearchQuery) bool {
	sq, err := backend.PrepareSearch(q)
	return err == nil && termLists(sq)
}

// ExplainTermLists returns the plan of q's term-list window as the store
// runs it (under pinTermListPlan).
func (s *Store) ExplainTermLists(ctx context.Context, q store.SearchQuery) (string, error) {
	sq, err := backend.PrepareSearch(q)
	if err != nil {
		return "", err
	}
	filter, args := searchFilter(sq)
	query, args := textWindow(sq, filter, args, true)
	var plan strings.Builder
	err = s.pinnedQuery(ctx, "EXPLAIN "+query, args, func(rows pgx.Rows) error {
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		plan.WriteString(strings.Join(lines, "\n"))
		return err
	})
	return plan.String(), err
}

// Setting returns a run-time setting as a connection of the store's pool
// has it.
func (s *Store) Setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v)
	return v, err
}

// OpenLater opens cfg's database as a later build would: the embedded
// migrations and then later. Tests of this package do not run in
// parallel.
func OpenLater(ctx context.Context, cfg *pgxpool.Config, later []backend.Migration) (*Store, error) {
	extraMigrations = later
	defer func() { extraMigrations = nil }()
	return OpenConfig(ctx, cfg.Copy(), store.WithMaxConns(3))
}

// NewestMigration is the newest embedded migration's version.
func NewestMigration() int {
	ms, err := backend.LoadMigrations(migrationFS, "migrations")
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// StopAuditIndexer stops the background indexer, for tests that need
// events to stay in audit_incoming.
func (s *Store) StopAuditIndexer() { s.auditIndexer.Stop() }
