package cache

import (
	"regexp"
	"testing"
)

func TestKeyString(t *testing.T) {
	t.Parallel()
	// The golden value pins the layout: Redis entries written by one release must be found by the next.
	k := Key{Tenant: "t1", Scope: "user:alice", Tool: "search-notes", Version: "v1", Domain: "notes", Args: []byte(`{"q":"go"}`)}
	// Computed independently: sha256 of each field (tag "toolsvc/cache.Key/v1" first) after its 8-byte big-endian length.
	const golden = "95d661c92c9992e94bd3887071ba6b101c56920f5c80fcdd1c5cb0a41564e82a"
	got := k.String()
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(got) {
		t.Fatalf("String() = %q, want 64 hex digits", got)
	}
	if got != golden {
		t.Errorf("String() = %s, want the golden %s: the key layout changed", got, golden)
	}
	same := k
	same.Args = append([]byte(nil), k.Args...)
	if same.String() != got {
		t.Error("equal keys hash differently")
	}
}

// TestKeyStringSeparatesFields lists pairs whose fields concatenate to the same bytes; length prefixes must
// keep them apart.
func TestKeyStringSeparatesFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		a, b Key
	}{
		{name: "tenant/scope boundary", a: Key{Tenant: "a", Scope: "bc"}, b: Key{Tenant: "ab", Scope: "c"}},
		{name: "scope/tool boundary", a: Key{Scope: "a", Tool: "bc"}, b: Key{Scope: "ab", Tool: "c"}},
		{name: "tool/version boundary", a: Key{Tool: "a", Version: "bc"}, b: Key{Tool: "ab", Version: "c"}},
		{name: "version/domain boundary", a: Key{Version: "a", Domain: "bc"}, b: Key{Version: "ab", Domain: "c"}},
		{name: "domain/args boundary", a: Key{Domain: "a", Args: []byte("bc")}, b: Key{Domain: "ab", Args: []byte("c")}},
		{name: "empty field moves", a: Key{Tenant: "x"}, b: Key{Scope: "x"}},
		{name: "separator inside a field", a: Key{Tenant: "a\x00", Scope: "b"}, b: Key{Tenant: "a", Scope: "\x00b"}},
		{name: "length bytes inside a field", a: Key{Tenant: "a", Scope: "b"}, b: Key{Tenant: "a\x00\x00\x00\x00\x00\x00\x00\x01b"}},
		{name: "args differ", a: Key{Args: []byte("{}")}, b: Key{Args: []byte("{ }")}},
		{name: "data versions differ", a: Key{Data: "v1", Args: []byte("{}")}, b: Key{Data: "v2", Args: []byte("{}")}},
		{name: "data or none", a: Key{Args: []byte("{}")}, b: Key{Data: "v1", Args: []byte("{}")}},
		{name: "data/args boundary", a: Key{Data: "ab", Args: []byte("c")}, b: Key{Args: []byte("\x00\x00\x00\x00\x00\x00\x00\x02abc")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.a.String() == tt.b.String() {
				t.Errorf("%+v and %+v hash to the same key", tt.a, tt.b)
			}
		})
	}
}

func TestDomainIDSeparatesFields(t *testing.T) {
	t.Parallel()
	if domainID("ab", "c") == domainID("a", "bc") {
		t.Error(`domainID("ab", "c") == domainID("a", "bc")`)
	}
}
