package backend

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		name  string
		terms []string
		want  []string
	}{
		{name: "words", terms: []string{"Postgres", "replication"}, want: []string{"postgres", "replication"}},
		{name: "operators removed", terms: []string{`"k*b" NEAR(c, 2) x:y -z ^w {v} 'q' \r`}, want: []string{"k", "b", "near", "c", "2", "x", "y", "z", "w", "v", "q", "r"}},
		{name: "stop words dropped", terms: []string{"the", "OR", "and", "database"}, want: []string{"database"}},
		{name: "duplicates dropped", terms: []string{"go", "Go", "GO!"}, want: []string{"go"}},
		{name: "accents kept", terms: []string{"café"}, want: []string{"café"}},
		{name: "too long dropped", terms: []string{strings.Repeat("a", 129), "ok"}, want: []string{"ok"}},
		{name: "invalid UTF-8", terms: []string{"ab\xffcd"}, want: []string{"ab", "cd"}},
		{name: "only punctuation", terms: []string{`"*()`}, want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tokens(tc.terms); !slices.Equal(got, tc.want) {
				t.Errorf("Tokens(%q) = %q, want %q", tc.terms, got, tc.want)
			}
		})
	}
	var many []string
	for i := range 2 * maxTokens {
		many = append(many, "w"+strconv.Itoa(i))
	}
	if got := Tokens(many); len(got) != maxTokens {
		t.Errorf("%d tokens, want cap %d", len(got), maxTokens)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	f := store.AuditFilter{Tenant: "t1", Tool: "memory_add", Since: time.Unix(100, 0)}
	p := Position{AtMicros: 1_700_000_000_000_000, ID: 42}
	c := EncodeCursor(f, p)
	got, err := DecodeCursor(f, c)
	if err != nil || got != p {
		t.Fatalf("DecodeCursor = %+v, %v; want %+v", got, err, p)
	}
	f.Limit = 7 // the page size is not part of the filter identity
	if _, err := DecodeCursor(f, c); err != nil {
		t.Errorf("cursor rejected after a Limit change: %v", err)
	}
	other := f
	other.Tenant = "t2"
	if _, err := DecodeCursor(other, c); !errors.Is(err, store.ErrInvalidCursor) {
		t.Errorf("cursor accepted for another tenant: %v", err)
	}
}

func FuzzDecodeCursor(f *testing.F) {
	filter := store.AuditFilter{Tenant: "t1"}
	f.Add(EncodeCursor(filter, Position{AtMicros: 5, ID: 9}))
	f.Add("")
	f.Add("YTEuMS4yLjM")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := DecodeCursor(filter, s)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidCursor) {
				t.Fatalf("error %v is not ErrInvalidCursor", err)
			}
			return
		}
		if again, err := DecodeCursor(filter, EncodeCursor(filter, p)); err != nil || again != p {
			t.Fatalf("re-encoded cursor of %+v decodes to %+v, %v", p, again, err)
		}
	})
}
