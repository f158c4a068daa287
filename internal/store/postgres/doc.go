// Package postgres implements store.Store on PostgreSQL through a pgx
// connection pool, for deployments with several replicas sharing one
// database.
//
// Full-text search uses a generated tsvector column
// (to_tsvector('english', content)) with a GIN index, ranked by
// ts_rank_cd; tags are a text[] column with a GIN index. Migrations run in
// one transaction under an advisory lock keyed by the schema, so replicas
// starting together apply each migration once. Connection failures and
// server restarts surface as store.UnavailableError.
package postgres
