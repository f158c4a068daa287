package registry

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// serving is a registry that serves one tool, search-memories, in versions.
func serving(t testing.TB, versions ...string) *Registry {
	t.Helper()
	r := &Registry{byName: map[string][]*Tool{}}
	for _, v := range versions {
		sv, err := parseSemver(v)
		if err != nil {
			t.Fatal(err)
		}
		r.byName["search-memories"] = append(r.byName["search-memories"], &Tool{Name: "search-memories", Version: v, semver: sv})
	}
	return r
}

// TestGetFollowsSemver is the pin rule of docs/CONTRACTS.md, "Calling a
// version": a pin is answered by the highest version served with its major
// and at least its minor and patch; "=" pins exactly.
func TestGetFollowsSemver(t *testing.T) {
	for _, tc := range []struct {
		name    string
		served  []string
		pin     string
		want    string       // the version that answers
		code    toolerr.Code // or the error
		exactly string       // a NOT_FOUND's message names this exact pin
	}{
		{name: "no pin is the highest", served: []string{"1.0.0", "1.1.0", "2.0.0"}, pin: "", want: "2.0.0"},
		{name: "replaced by a minor", served: []string{"1.1.0"}, pin: "1.0.0", want: "1.1.0"},
		{name: "replaced by a patch", served: []string{"1.0.1"}, pin: "1.0.0", want: "1.0.1"},
		{name: "a lower patch pin", served: []string{"1.1.0"}, pin: "1.0.7", want: "1.1.0"},
		{name: "exact version, nothing newer", served: []string{"1.1.0"}, pin: "1.1.0", want: "1.1.0"},
		{name: "side by side: the highest compatible", served: []string{"1.0.0", "1.1.0"}, pin: "1.0.0", want: "1.1.0"},
		{name: "side by side: exact pin to the older", served: []string{"1.0.0", "1.1.0"}, pin: "=1.0.0", want: "1.0.0"},
		{name: "side by side: exact pin to the newer", served: []string{"1.0.0", "1.1.0"}, pin: "=1.1.0", want: "1.1.0"},
		{name: "never a higher major", served: []string{"1.1.0", "2.0.0"}, pin: "1.0.0", want: "1.1.0"},
		{name: "numeric, not string, order", served: []string{"1.2.0", "1.10.0"}, pin: "1.3.0", want: "1.10.0"},
		{name: "major 0 follows the same rule", served: []string{"0.2.0"}, pin: "0.1.0", want: "0.2.0"},
		{name: "exact pin no longer served", served: []string{"1.1.0"}, pin: "=1.0.0", code: toolerr.NotFound, exactly: "=1.1.0"},
		{name: "another major", served: []string{"1.1.0"}, pin: "2.0.0", code: toolerr.NotFound, exactly: "=1.1.0"},
		{name: "a lower major", served: []string{"2.0.0"}, pin: "1.0.0", code: toolerr.NotFound, exactly: "=2.0.0"},
		{name: "a higher minor than served", served: []string{"1.1.0"}, pin: "1.2.0", code: toolerr.NotFound, exactly: "=1.1.0"},
		{name: "a higher patch than served", served: []string{"1.1.3"}, pin: "1.1.4", code: toolerr.NotFound, exactly: "=1.1.3"},
		{name: "two parts", served: []string{"1.1.0"}, pin: "1.0", code: toolerr.InvalidInput},
		{name: "a v prefix", served: []string{"1.1.0"}, pin: "v1.0.0", code: toolerr.InvalidInput},
		{name: "a leading zero", served: []string{"1.1.0"}, pin: "01.0.0", code: toolerr.InvalidInput},
		{name: "a sign", served: []string{"1.1.0"}, pin: "1.+1.0", code: toolerr.InvalidInput},
		{name: "a pre-release", served: []string{"1.1.0"}, pin: "1.1.0-beta", code: toolerr.InvalidInput},
		{name: "a caret", served: []string{"1.1.0"}, pin: "^1.0.0", code: toolerr.InvalidInput},
		{name: "two equals signs", served: []string{"1.1.0"}, pin: "==1.0.0", code: toolerr.InvalidInput},
		{name: "only an equals sign", served: []string{"1.1.0"}, pin: "=", code: toolerr.InvalidInput},
		{name: "spaces", served: []string{"1.1.0"}, pin: " 1.0.0", code: toolerr.InvalidInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := serving(t, tc.served...).Get("search-memories", tc.pin)
			if tc.code == "" {
				if err != nil || got.Version != tc.want {
					t.Fatalf("Get(%q) = %v, %v; want %s", tc.pin, got, err, tc.want)
				}
				return
			}
			te, ok := toolerr.As(err)
			if !ok || te.Code != tc.code {
				t.Fatalf("Get(%q) = %v, %v; want %s", tc.pin, got, err, tc.code)
			}
			switch tc.code {
			case toolerr.InvalidInput:
				if len(te.Violations) != 1 || te.Violations[0].GetField() != "version" || te.Violations[0].GetRule() != "string.version_pin" {
					t.Fatalf("violations = %v, want one on the field version", te.Violations)
				}
			case toolerr.NotFound:
				if vs, _ := te.Details["versions"].([]any); !slices.Equal(vs, toAny(tc.served)) {
					t.Fatalf("details versions = %v, want %v", te.Details["versions"], tc.served)
				}
				if te.Details["version"] != tc.pin || !strings.Contains(te.Message, `"`+tc.exactly+`"`) {
					t.Fatalf("NOT_FOUND %q (details %v) names neither the pin nor how to pin exactly", te.Message, te.Details)
				}
			}
		})
	}
	if _, err := serving(t, "1.1.0").Get("no-such-tool", "1.0.0"); err == nil {
		t.Fatal("an unknown tool answered")
	} else if te, _ := toolerr.As(err); te.Code != toolerr.NotFound || te.Details["reason"] != toolerr.ReasonUnknownTool {
		t.Fatalf("unknown tool: %v, want UnknownTool", err)
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
