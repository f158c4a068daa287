// Package cache stores results of cacheable tools (docs/CONTRACTS.md: cacheable, cacheTTL) and runs concurrent
// identical misses once.
//
// A result is keyed by tenant, the principal's visible scope, tool, version and canonical arguments, so two
// principals who may see different data never share an entry. Mutations are never cached — the caller only
// calls Set or Group.Do for tools whose contract says cacheable — and a mutation in a domain calls
// InvalidateDomain, which makes every cached query of that tenant and domain unreachable in O(1): each
// (tenant, domain) has a generation counter, every entry records the generation it was written under, and an
// entry from an older generation is a miss. Old entries are never scanned for; they expire with their TTL or
// are evicted.
//
// Memory is an in-process LRU bounded by bytes; Redis shares entries and generations between replicas.
// Group wraps either with singleflight and turns backend failures into cache misses, so a broken cache slows
// calls down but never fails them.
package cache
