package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestVersionPinFollowsSemver: search-memories is served at 1.1.0 only
// (1.0.0 is recorded in testdata/schemas, no longer served). On every
// transport a pin to 1.0.0 is answered by 1.1.0, which the result's
// metadata names; the exact pin =1.0.0 is NOT_FOUND naming the versions
// served; =1.1.0 answers; another major, a higher minor and a malformed
// pin are refused (docs/CONTRACTS.md, "Calling a version").
func TestVersionPinFollowsSemver(t *testing.T) {
	srv := testserver.New(t, testserver.Options{})
	transports := func(pin string) []Transport {
		return []Transport{GRPC{S: srv, Version: pin}, REST{S: srv, Version: pin}, MCP{S: srv, Version: pin}}
	}
	args := map[string]any{"query": "payments team deploys"}
	for _, tc := range []struct {
		pin, code, answeredBy string
	}{
		{pin: "", code: "OK", answeredBy: "1.1.0"},
		{pin: "1.0.0", code: "OK", answeredBy: "1.1.0"},
		{pin: "1.1.0", code: "OK", answeredBy: "1.1.0"},
		{pin: "=1.1.0", code: "OK", answeredBy: "1.1.0"},
		{pin: "=1.0.0", code: "NOT_FOUND"},
		{pin: "2.0.0", code: "NOT_FOUND"},
		{pin: "1.2.0", code: "NOT_FOUND"},
		{pin: "1.0", code: "INVALID_INPUT"},
		{pin: "=v1.0.0", code: "INVALID_INPUT"},
	} {
		for _, tr := range transports(tc.pin) {
			o, err := tr.Call(context.Background(), "", "search-memories", args, nil)
			if err != nil {
				t.Fatalf("%s, pin %q: %v", tr.Name(), tc.pin, err)
			}
			if o.Code != tc.code {
				t.Errorf("%s, pin %q: %s %v, want %s", tr.Name(), tc.pin, o.Code, o.Error, tc.code)
				continue
			}
			switch tc.code {
			case "OK":
				md, _ := o.Result["metadata"].(map[string]any)
				if md["toolVersion"] != tc.answeredBy || md["tool"] != "search-memories" {
					t.Errorf("%s, pin %q: metadata %v, want toolVersion %s", tr.Name(), tc.pin, md, tc.answeredBy)
				}
			case "NOT_FOUND":
				// The versions served, and how to pin one exactly.
				details, _ := o.Error["details"].(map[string]any)
				versions, _ := details["versions"].([]any)
				msg, _ := o.Error["message"].(string)
				if !slices.Equal(versions, []any{"1.1.0"}) || !strings.Contains(msg, `"=1.1.0"`) {
					t.Errorf("%s, pin %q: %v, want details.versions [1.1.0] and a message naming =1.1.0", tr.Name(), tc.pin, o.Error)
				}
			case "INVALID_INPUT":
				if !violates(o.Error, "version") {
					t.Errorf("%s, pin %q: %v, want a violation on the field version", tr.Name(), tc.pin, o.Error)
				}
			}
		}
	}
}

// violates reports whether the ToolError te names field among its field
// violations.
func violates(te map[string]any, field string) bool {
	b, _ := json.Marshal(te["fieldViolations"])
	var vs []struct {
		Field string `json:"field"`
	}
	_ = json.Unmarshal(b, &vs)
	return slices.ContainsFunc(vs, func(v struct {
		Field string `json:"field"`
	}) bool {
		return v.Field == field
	})
}
