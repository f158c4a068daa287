package sqlite

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"modernc.org/sqlite"

	"github.com/toolsvc/toolsvc/internal/base/words"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// The full-text index holds scoped terms (migration 0010): each distinct
// searchable word of a memory, stemmed (words.Stem), becomes one token
// prefixed by the memory's scope key, so a term's doclist holds only the
// memories of one scope of one tenant. A search ORs the caller's scoped
// terms and FTS5 walks matches in scope and nothing else: the walk costs
// the window, however many memories other scopes and tenants hold. With
// the scope as a second column ANDed with the words (migration 0002), each
// step of the walk skipped over the postings of the caller's scopes that
// held none of the words, which at a million memories was most of a
// search's time.
//
// The tokens are made in Go, by the same analysis the ranking uses
// (package words), both when a memory is indexed (the triggers call
// toolsvc_memory_terms) and when a search is rendered (scopedMatch), so
// matching and ranking agree on what a word and its stem are, as PostgreSQL's
// english configuration does. FTS5's tokenizer only splits the list on
// spaces: a token is the scope key ('k' and lower-case hex), then 'x' and
// the stem when the stem is lower-case ASCII letters and digits, or 'y'
// and the stem's bytes in hex otherwise, so every token is one unicode61
// token and no two stems or scopes share one. Since migration 0017 a
// memory's list also holds its near-duplicate keys (writeNearKey), which
// add-memory's near-duplicate check looks up instead of searching for all
// of a new memory's words.
const termsFunc = "toolsvc_memory_terms"

func init() {
	sqlite.MustRegisterDeterministicScalarFunction(termsFunc, 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		key, ok1 := args[0].(string)
		content, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: want two strings", termsFunc)
		}
		return memoryTerms(key, content), nil
	})
}

// memoryTerms is the indexed text of a memory of the scope with key
// scopeKey: its distinct scoped terms, space-separated.
func memoryTerms(scopeKey, content string) string {
	var stems []string
	for w := range words.All(content) {
		if backend.Searchable(w) {
			if s := words.Stem(w); s != "" {
				stems = append(stems, s)
			}
		}
	}
	slices.Sort(stems)
	stems = slices.Compact(stems)
	var b strings.Builder
	for i, s := range stems {
		if i > 0 {
			b.WriteByte(' ')
		}
		writeScopedTerm(&b, scopeKey, s)
	}
	for _, k := range store.NearDuplicateKeys(words.Terms(content)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		writeNearKey(&b, scopeKey, k)
	}
	return b.String()
}

// writeNearKey writes the index token of a memory's near-duplicate key
// (store.NearDuplicateKeys) in the scope with key scopeKey: the scope key,
// 'z' and the key's bytes in hex. No search token has the 'z', so a
// search never matches one, and the near-duplicate check
// (NearDuplicateCandidates) matches nothing else.
func writeNearKey(b *strings.Builder, scopeKey, key string) {
	b.WriteString(scopeKey)
	b.WriteByte('z')
	b.WriteString(hex.EncodeToString([]byte(key)))
}

// writeScopedTerm writes the index token of stem in the scope with key
// scopeKey.
func writeScopedTerm(b *strings.Builder, scopeKey, stem string) {
	b.WriteString(scopeKey)
	if plainStem(stem) {
		b.WriteByte('x')
		b.WriteString(stem)
		return
	}
	b.WriteByte('y')
	b.WriteString(hex.EncodeToString([]byte(stem)))
}

// plainStem reports whether stem is lower-case ASCII letters and digits
// only, which unicode61 keeps as they are.
func plainStem(stem string) bool {
	for i := range len(stem) {
		if c := stem[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
