package backend

import (
	"reflect"
	"strings"
	"testing"
)

func TestTokenGroups(t *testing.T) {
	abc := []string{"a", "b", "c"}
	split := func(s string) []string { return strings.Split(s, "") }
	tests := []struct {
		tokens []string
		k      int
		want   [][]string
		each   bool
	}{
		{tokens: abc, k: 0},
		{tokens: abc, k: 1},
		{tokens: abc, k: 2, want: [][]string{{"a", "b"}, {"a", "c"}, {"b", "c"}}},
		{tokens: abc, k: 3, want: [][]string{abc}},
		{tokens: abc, k: 9, want: [][]string{abc}},
		{tokens: []string{"a"}, k: 2},
		// C(3,2) x 2 = 6 occurrences: exact.
		{tokens: split("abc"), k: 2, want: [][]string{split("ab"), split("ac"), split("bc")}},
		// C(4,3) x 3 = 12 > 8: blocks of 2, one of each pair.
		{tokens: split("abcd"), k: 3, want: [][]string{split("ab"), split("cd")}, each: true},
		// C(5,3) x 3 = 30 > 8: blocks of 3, the remainder "de" dropped.
		{tokens: split("abcde"), k: 3, want: [][]string{split("abc")}, each: true},
		// 15 of 16: one of every pair.
		{tokens: split("abcdefghijklmnop"), k: 15, each: true, want: [][]string{
			split("ab"), split("cd"), split("ef"), split("gh"), split("ij"), split("kl"), split("mn"), split("op")}},
		{tokens: split("abcdefg"), k: 7, want: [][]string{split("abcdefg")}},
	}
	for _, tc := range tests {
		got, each := TokenGroups(tc.tokens, tc.k)
		if !reflect.DeepEqual(got, tc.want) || each != tc.each {
			t.Errorf("TokenGroups(%v, %d) = %v, %v; want %v, %v", tc.tokens, tc.k, got, each, tc.want, tc.each)
		}
	}
}

func TestRender(t *testing.T) {
	q := func(s string) string { return "'" + s + "'" }
	tokens := []string{"a", "b", "c"}
	tests := []struct {
		s    Search
		want string
	}{
		{s: Search{Tokens: tokens}, want: "'a' | 'b' | 'c'"},
		{s: Search{Tokens: tokens, Groups: [][]string{{"a", "b"}, {"a", "c"}}}, want: "('a' & 'b') | ('a' & 'c')"},
		{s: Search{Tokens: tokens, Groups: [][]string{{"a", "b"}, {"c"}}, EachGroup: true}, want: "('a' | 'b') & ('c')"},
	}
	for _, tc := range tests {
		if got := tc.s.Render(q, " & ", " | "); got != tc.want {
			t.Errorf("Render(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
