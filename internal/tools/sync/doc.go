// Package sync implements the sync tools of seed 002: sync-knowledge, which
// keeps one pointer memory per knowledge item in the item's layer, and
// get-sync-status, as the generated syncv1.SyncServiceServer.
//
// Pointers are keyed by (tenant, knowledge item id). Change detection uses
// the item's content hash (content, constraints, status and the other
// front-matter fields); a forced sync rewrites every pointer in place, so it
// never duplicates one. The pointer of an item whose file disappeared is
// marked orphaned; the pointer of an item whose file is now malformed is
// left alone, since the item may still exist.
package sync
