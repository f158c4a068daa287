// Package store defines toolsvc's durable storage: memories (with full-text
// search), knowledge sync bookkeeping and the append-only audit log.
//
// The package holds only interfaces, domain types and errors. Two backends
// implement [Store] and pass the same conformance suite
// (package storetest): package sqlite, the embedded default that keeps
// everything in one file, and package postgres for deployments with several
// replicas. Package backends opens the backend a DSN names.
//
// Every method is scoped by tenant: a record of another tenant is
// indistinguishable from a record that does not exist ([ErrNotFound]).
// Timestamps are set by the store, in UTC, truncated to microseconds so that
// both backends return identical values.
package store
