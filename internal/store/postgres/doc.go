// Package postgres implements store.Store on PostgreSQL through a pgx
// connection pool, for deployments with several replicas sharing one
// database.
//
// Full-text search uses a generated tsvector column
// (to_tsvector('english', content)) and, for searches of OR-ed words, the
// scoped term lists kept from it (migration 0008, textWindow); token groups
// and tag filters go through its GIN index. Both rank the window of newest
// matches with BM25 on its own statistics, as SQLite does. Tags are a
// text[] column with a GIN index. Migrations run in
// one transaction under an advisory lock keyed by the schema, so replicas
// starting together apply each migration once. Connection failures and
// server restarts surface as store.UnavailableError.
package postgres
