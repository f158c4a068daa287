package store

import (
	"context"
	"encoding/binary"
	"hash/fnv"

	"github.com/toolsvc/toolsvc/internal/base/words"
)

// NearDuplicateJaccard is the Jaccard similarity of two memories' term sets
// (words.Terms of their contents) at or above which they are
// near-duplicates. It is nearNum/nearDen, which NearDuplicateKeys uses in
// integer arithmetic (an untyped constant, so that it too is exact
// wherever it is computed with).
const (
	NearDuplicateJaccard = 0.9
	nearNum, nearDen     = 9, 10
)

// The fraction and the constant agree (a compile-time check: a constant
// conversion of a negative value to uint fails).
const (
	_ = uint(nearNum*10 - NearDuplicateJaccard*nearDen*10)
	_ = uint(NearDuplicateJaccard*nearDen*10 - nearNum*10)
)

// MinNearSize is the smallest term set that can be a near-duplicate of a
// different set: s/(s+1) >= NearDuplicateJaccard. A smaller set is a
// near-duplicate of an identical set only, and a set of MinNearSize terms
// or more only of sets of MinNearSize terms or more (a near-duplicate of
// n terms has at least ceil(9/10 · n)).
const MinNearSize = (nearNum + nearDen - nearNum - 1) / (nearDen - nearNum)

// NearDuplicateKeys returns the keys a store indexes for a memory whose
// term set is set (a words.Terms result: distinct, sorted by
// words.Term.Compare, one global order), such that two memories whose
// Jaccard similarity reaches NearDuplicateJaccard always share a key, and
// most others share none:
//
//   - a set of fewer than MinNearSize terms has one key, "s" and a hash of
//     the whole set: only an identical set is its near-duplicate;
//   - a larger set has a key "p" and the stem for each of its first
//     n − ceil(9/10 · n) + 1 terms. A near-duplicate of A shares at least
//     ceil(9/10 · |A|) of its terms, and the first |A| − ceil(9/10 · |A|) + 1
//     terms of A meet the first |B| − ceil(9/10 · |B|) + 1 terms of B
//     (prefix filtering: the shared terms cannot all lie past both
//     prefixes). 16 terms have two keys, 100 terms eleven.
//
// A store that indexes each memory's keys finds every near-duplicate of a
// text by looking up the text's keys alone (NearDuplicateFinder). An empty
// set has no key.
func NearDuplicateKeys(set []words.Term) []string {
	n := len(set)
	switch {
	case n == 0:
		return nil
	case n < MinNearSize:
		h := fnv.New64a()
		for _, t := range set {
			h.Write([]byte(t.Stem))
			h.Write([]byte{0})
		}
		return []string{"s" + string(binary.BigEndian.AppendUint64(nil, h.Sum64()))}
	}
	shared := (nearNum*n + nearDen - 1) / nearDen
	keys := make([]string, n-shared+1)
	for i := range keys {
		keys[i] = "p" + set[i].Stem
	}
	return keys
}

// NearDuplicateFinder is implemented by stores that index each memory's
// NearDuplicateKeys (SQLite). add-memory uses it instead of a full-text
// search for its near-duplicate check.
type NearDuplicateFinder interface {
	// NearDuplicateCandidates returns the memories of scope sc of the
	// tenant, orphaned pointers excluded, that share a key with content's
	// terms, newest first: every memory whose Jaccard similarity to
	// content reaches NearDuplicateJaccard, and others that the caller
	// rules out by computing it. At most MatchedCap are returned (the
	// newest); only ID, Content and CreatedAt are set.
	NearDuplicateCandidates(ctx context.Context, tenant string, sc Scope, content string) ([]Memory, error)
}
