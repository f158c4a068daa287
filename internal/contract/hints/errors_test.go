package hints

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// TestForError: every code's hints pass the AgentHints contract and say
// what an agent needs: the field to fix, whether and when to retry, the
// tool to call instead, and a confidence that follows the diagnosis.
func TestForError(t *testing.T) {
	v, err := protovalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	violation := []*toolsvcv1.FieldViolation{{Field: "content", Rule: "string.min_len", Message: "too short"}}
	instead := &toolsvcv1.SuggestedAction{Action: "query-knowledge", Priority: High}
	tests := []struct {
		name       string
		f          ErrorFacts
		wantAction string // a suggested action, "" for none required
		noAction   string // an action that must not be suggested
		minConf    float64
		maxConf    float64
		wantRisk   bool
	}{
		{name: "invalid input", f: ErrorFacts{Code: codeInvalidInput, Tool: "add-memory", Violations: violation},
			wantAction: "add-memory", minConf: 0.9, maxConf: 1},
		{name: "not found with the tool's alternative", f: ErrorFacts{Code: codeNotFound, Tool: "show-knowledge", Next: []*toolsvcv1.SuggestedAction{instead}},
			wantAction: "query-knowledge", minConf: 0.8, maxConf: 1},
		{name: "rate limited", f: ErrorFacts{Code: codeRateLimited, Tool: "sync-knowledge", RetryAfter: 3 * time.Second, Retryable: true},
			wantAction: "sync-knowledge", minConf: 0.9, maxConf: 1},
		{name: "timeout of a query", f: ErrorFacts{Code: codeTimeout, Tool: "search-memories", Query: true, Retryable: true},
			wantAction: "search-memories", minConf: 0.5, maxConf: 0.7},
		{name: "timeout of a write without a key", f: ErrorFacts{Code: codeTimeout, Tool: "add-memory", Unsafe: true},
			noAction: "add-memory", minConf: 0.5, maxConf: 0.7, wantRisk: true},
		{name: "timeout of a write with a key", f: ErrorFacts{Code: codeTimeout, Tool: "add-memory", Unsafe: true, Keyed: true, Retryable: true},
			wantAction: "add-memory", minConf: 0.5, maxConf: 0.7},
		{name: "internal", f: ErrorFacts{Code: "INTERNAL", Tool: "add-memory"}, noAction: "add-memory", minConf: 0.1, maxConf: 0.4},
		{name: "unauthorized", f: ErrorFacts{Code: codeUnauthorized}, minConf: 0.9, maxConf: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := ForError(tc.f)
			if err := v.Validate(h); err != nil {
				t.Fatalf("hints break the contract: %v", err)
			}
			if !Valid(h) {
				t.Errorf("hints.Valid refuses them")
			}
			has := func(a string) bool {
				for _, s := range h.GetSuggestedNextActions() {
					if s.GetAction() == a {
						return true
					}
				}
				return false
			}
			if tc.wantAction != "" && !has(tc.wantAction) {
				t.Errorf("no %s among %v", tc.wantAction, h.GetSuggestedNextActions())
			}
			if tc.noAction != "" && has(tc.noAction) {
				t.Errorf("suggests %s, which is not safe or useful here", tc.noAction)
			}
			if c := h.GetConfidence(); c < tc.minConf || c > tc.maxConf {
				t.Errorf("confidence %v, want in [%v, %v]", c, tc.minConf, tc.maxConf)
			}
			if tc.wantRisk != (len(h.GetRiskFactors()) > 0) {
				t.Errorf("risk factors = %v, want some: %v", h.GetRiskFactors(), tc.wantRisk)
			}
			if h.GetReasoning() == "" {
				t.Errorf("no reasoning")
			}
		})
	}
}

// TestForErrorAlwaysHasANextStep: every failure, with or without a
// resolved tool, suggests at least one action, and when retrying cannot
// help (not retryable, and no input to correct) none of them is a plain
// retry of the same call.
func TestForErrorAlwaysHasANextStep(t *testing.T) {
	codes := []string{"INVALID_INPUT", "UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND", "CONFLICT", "RATE_LIMITED", "TIMEOUT", "PROVIDER_ERROR", "INTERNAL"}
	for _, code := range codes {
		for _, tool := range []string{"", "add-memory"} {
			for _, retryable := range []bool{false, true} {
				for _, unsafe := range []bool{false, true} {
					f := ErrorFacts{Code: code, Tool: tool, Retryable: retryable, Unsafe: unsafe}
					name := fmt.Sprintf("%s tool=%q retryable=%v unsafe=%v", code, tool, retryable, unsafe)
					acts := ForError(f).GetSuggestedNextActions()
					if len(acts) == 0 {
						t.Errorf("%s: no next action", name)
						continue
					}
					// Retrying helps when the error is retryable, unless the
					// call may have taken effect (a timeout or an unavailable
					// dependency of a non-idempotent tool, without a key). A
					// rate limit refused the call before the tool ran: always
					// retryable (the error model), whatever the facts say.
					effectUnknown := unsafe && (code == "TIMEOUT" || code == "PROVIDER_ERROR")
					if code == "RATE_LIMITED" || (retryable && !effectUnknown) {
						continue
					}
					for _, a := range acts {
						plainRetry := (a.GetAction() == tool && tool != "" || a.GetAction() == ActionRetry) &&
							a.GetCategory() != "correction" && a.GetCategory() != "optimization"
						if plainRetry {
							t.Errorf("%s: suggests a plain retry (%s: %s) where retrying cannot help", name, a.GetAction(), a.GetDescription())
						}
					}
				}
			}
		}
	}
}

// TestInstructionsDocumented: the contract an agent reads (hints.proto's
// comment on SuggestedAction.action, which becomes its schema description)
// names every action that is not a tool, so an agent does not call one.
func TestInstructionsDocumented(t *testing.T) {
	files := &descriptorpb.FileDescriptorSet{}
	if err := proto.Unmarshal(descriptor.Set, files); err != nil {
		t.Fatal(err)
	}
	var comment string
	for _, f := range files.GetFile() {
		if f.GetName() != "toolsvc/v1/hints.proto" {
			continue
		}
		for _, loc := range f.GetSourceCodeInfo().GetLocation() {
			// message_type (4), SuggestedAction's index, field (2), action (0).
			p := loc.GetPath()
			if len(p) == 4 && p[0] == 4 && f.GetMessageType()[p[1]].GetName() == "SuggestedAction" && p[2] == 2 && p[3] == 0 {
				comment = loc.GetLeadingComments()
			}
		}
	}
	if comment == "" {
		t.Fatal("no comment on SuggestedAction.action in the descriptor set")
	}
	for _, a := range Instructions {
		if !strings.Contains(comment, a+" (") {
			t.Errorf("hints.proto's SuggestedAction.action does not document the instruction %s", a)
		}
	}
}

// TestImpactHasNoFloatNoise: roi is shown without benefit / effort's
// float noise and still keeps the hints' rule.
func TestImpactHasNoFloatNoise(t *testing.T) {
	h := New().Impact(0.3, 0.8).Build("test")
	if r := h.GetEstimatedImpact().GetRoi(); r != 0.375 {
		t.Errorf("roi %v, want 0.375", r)
	}
	if !Valid(h) {
		t.Error("the hints break their rules")
	}
	h = New().Impact(1, 0.03).Build("test") // 33.333333…
	if !Valid(h) {
		t.Errorf("roi %v breaks the hints' rule", h.GetEstimatedImpact().GetRoi())
	}
}
