package hints

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// ErrorFacts is what is known of a failed call when its hints are built.
// Codes are ToolError codes (package toolerr names them; it builds on this
// package, so they are strings here).
type ErrorFacts struct {
	// Code is the ToolError code.
	Code string
	// Tool is the tool called; empty when the call reached no tool.
	Tool string
	// Query is true for tools of category query (a narrower request may
	// finish where a broad one timed out).
	Query bool
	// Violations are the invalid fields of an INVALID_INPUT.
	Violations []*toolsvcv1.FieldViolation
	// RetryAfter is how long to wait before retrying, when known.
	RetryAfter time.Duration
	// Retryable is the ToolError's final retryable.
	Retryable bool
	// Unsafe is true when the failure may have had an effect on a tool that
	// is not idempotent: a plain retry could write twice.
	Unsafe bool
	// Keyed is true when the call carried an idempotency key.
	Keyed bool
	// Next are actions the tool itself suggested (e.g. query-knowledge
	// after show-knowledge's NOT_FOUND); they come first.
	Next []*toolsvcv1.SuggestedAction
}

// The ToolError codes the hints below tell apart.
const (
	codeInvalidInput  = "INVALID_INPUT"
	codeUnauthorized  = "UNAUTHORIZED"
	codeForbidden     = "FORBIDDEN"
	codeNotFound      = "NOT_FOUND"
	codeConflict      = "CONFLICT"
	codeRateLimited   = "RATE_LIMITED"
	codeTimeout       = "TIMEOUT"
	codeProviderError = "PROVIDER_ERROR"
)

// ListTools is the action that lists the tools the caller may use (MCP
// tools/list, gRPC ListTools, REST GET /v1/tools).
const ListTools = "list-tools"

// ActionFixViolation is the instruction to change what was checked (a
// file, a dependency) so that it keeps the violated constraint, then to
// check again.
const ActionFixViolation = "fix-violation"

// Instructions are the suggested actions that are not tools: an agent
// does them (or asks its person to) and never calls them. Every other
// action is the name of a tool, with data as its arguments. hints.proto's
// SuggestedAction.action documents this list (TestInstructionsDocumented
// holds the two equal), and docs/CONTRACTS.md explains each.
var Instructions = []string{
	ListTools, ActionProvideCredential, ActionRequestAccess, ActionFixViolation,
	ActionVerifyOutcome, ActionReportToOperator, ActionRetry,
}

// IsInstruction reports whether action is one of Instructions, not a tool.
func IsInstruction(action string) bool { return slices.Contains(Instructions, action) }

// Actions an error's hints suggest that are not tools: what the agent (or
// the person behind it) does when calling again cannot help.
const (
	// ActionProvideCredential: send a valid credential.
	ActionProvideCredential = "provide-credential"
	// ActionRequestAccess: ask the operator for the permission or scope
	// the call needs.
	ActionRequestAccess = "request-access"
	// ActionVerifyOutcome: read the current state (list, search, get)
	// before acting again, because the failed call may have taken effect.
	ActionVerifyOutcome = "verify-outcome"
	// ActionReportToOperator: give the operators the error's traceId.
	ActionReportToOperator = "report-to-operator"
	// ActionRetry: call again unchanged, for a failure before any tool
	// was resolved (the tool's own name is used when it is known).
	ActionRetry = "retry-call"
)

// ForError returns the agent hints of a failure (docs/CONTRACTS.md: hints are
// required on every answer, errors included). They say what to do next:
// which field to fix and how, when to retry and whether it is safe, which
// tool to call instead. Confidence is how sure the server is of its
// diagnosis: high when it checked the cause itself (a violated rule, a
// limit, a missing item), low when it only saw a symptom (a deadline, an
// unavailable dependency, an internal fault).
func ForError(f ErrorFacts) *toolsvcv1.AgentHints {
	b := New().Validity(ValidImmediate).Quality(QualityHigh)
	b.h.SuggestedNextActions = append(b.h.SuggestedNextActions, f.Next...)
	tool := f.Tool
	retry := func(priority, why string, opts ...ActionOption) {
		b.Next(cmpOr(tool, ActionRetry), priority, why, opts...)
	}
	switch f.Code {
	case codeInvalidInput:
		for _, v := range f.Violations {
			b.Warn("validation", Medium, fmt.Sprintf("%s: %s", v.GetField(), v.GetMessage()),
				fmt.Sprintf("set %s so that it satisfies %s", v.GetField(), v.GetRule()))
		}
		retry(High, "call again with the fields named in the warnings corrected",
			WithCategory("correction"), WithOutcome("the call passes validation"),
			WithArgs(map[string]any{"fieldsToFix": fieldNames(f.Violations)}))
		if tool == "" {
			b.Next(ListTools, Medium, "list the tools to check the tool's name and its inputSchema", WithCategory("exploration"))
		}
		b.Reason("the input was refused (%s); the same input fails again", violated(f.Violations)).
			Evidence(Evidence{Name: "rule checked", Value: ifElse(len(f.Violations) > 0, 0.95, 0.7), Weight: 1}).
			Impact(0.8, 0.2)
	case codeUnauthorized:
		b.Next(ActionProvideCredential, High, "send a valid credential (Authorization: Bearer <api key or JWT>); an expired JWT needs a new one",
			WithCategory("correction"), WithOutcome("the call is authenticated"))
		b.NeedContext("a valid credential (Authorization: Bearer <token>)").
			Reason("the call carried no valid credential; retrying without one fails again").
			Evidence(Evidence{Name: "credential checked", Value: 0.95, Weight: 1}).Impact(0.5, 0.5)
	case codeForbidden:
		b.Next(ListTools, High, "list the tools this credential may use and pick one of them", WithCategory("exploration"))
		b.Next(ActionRequestAccess, Medium, "ask the operator for the permission, tenant or scope this call needs")
		b.NeedContext("a credential allowed to make this call").
			Reason("the credential is valid but the policy refuses this call; retrying with it fails again").
			Evidence(Evidence{Name: "policy checked", Value: 0.9, Weight: 1}).Impact(0.3, 0.8)
	case codeNotFound:
		b.Next(ListTools, Medium, "list the tools this credential may use and check the name and ids",
			WithCategory("exploration"))
		b.Reason("what the call names does not exist for this caller; retrying the same call fails again").
			Evidence(Evidence{Name: "lookup done", Value: 0.9, Weight: 1}).Impact(0.5, 0.3)
	case codeRateLimited:
		wait := math.Max(f.RetryAfter.Seconds(), 1)
		retry(High, fmt.Sprintf("retry after %.0f s: the call was refused before the tool ran, so retrying is safe", math.Ceil(wait)),
			WithArgs(map[string]any{"retryAfterSeconds": wait}), WithEstimatedTime(wait*1000))
		b.Reason("a rate or concurrency limit refused the call before the tool ran").
			Evidence(Evidence{Name: "limit checked", Value: 0.95, Weight: 1}).Impact(0.7, 0.2)
	case codeTimeout, codeProviderError:
		symptom := "the call did not finish before its deadline"
		if f.Code == codeProviderError {
			symptom = "a dependency (storage, embeddings, an upstream) was unavailable"
		}
		switch {
		case f.Unsafe && !f.Keyed:
			b.Next(ActionVerifyOutcome, High, "read the current state (list, search or get) to see whether the call took effect before acting again",
				WithCategory("exploration"))
			b.Risk("accuracy", High, "the tool may have completed before the failure; a plain retry could apply it twice", 0.5, 0.7,
				"retry with an Idempotency-Key (header, gRPC metadata or MCP _meta) so a completed call is not repeated")
			b.Warn("duplicate", High, "not retryable without an idempotency key: the call may have taken effect",
				"check the result first (e.g. list or search), or send the next call with an Idempotency-Key")
		case f.Retryable:
			why := "retry with backoff; the tool is idempotent, so retrying is safe"
			if f.Keyed {
				why = "retry with backoff and the same Idempotency-Key: the tool never runs twice for one key; if this call may have taken effect, the retry says so (outcome unknown) instead of running it again"
			}
			retry(Medium, why, WithEstimatedTime(1000))
		default:
			b.Next(ActionReportToOperator, Medium, "retrying cannot help (the upstream refused toolsvc's own credential, or no longer serves the tool): report the traceId to the operators")
		}
		if f.Code == codeTimeout && f.Query && tool != "" {
			b.Next(tool, Medium, "narrow the request (a smaller limit, a more specific query or filter) so it finishes in time",
				WithCategory("optimization"))
		}
		b.Reason("%s; the cause is a symptom, not a checked fact", symptom).
			Evidence(Evidence{Name: "symptom only", Value: 0.6, Weight: 1}).Impact(0.5, 0.5)
	case codeConflict:
		if f.Retryable {
			retry(Medium, "read the current state and retry: another change won the race", WithEstimatedTime(500))
			break
		}
		// Not retryable: the idempotency key was used for another call, or
		// the first call with it may have taken effect (outcome unknown).
		b.Next(ActionVerifyOutcome, High, "read the current state (list, search or get) to see whether the earlier call with this idempotency key took effect",
			WithCategory("exploration"))
		b.Next(cmpOr(tool, ActionRetry), Medium, "for a different call, send a new Idempotency-Key; never reuse one for other arguments",
			WithCategory("correction"))
		b.Reason("a concurrent change or another call with the same idempotency key conflicted with this one").
			Evidence(Evidence{Name: "conflict detected", Value: 0.85, Weight: 1}).Impact(0.5, 0.4)
	default: // INTERNAL
		b.Next(ActionReportToOperator, Medium, "report the traceId to the operators: the cause is in their logs")
		b.Quality(QualityLow).
			NeedContext("the traceId of the error, for the operators' logs").
			Reason("an internal fault; its cause is logged, not shown. Retrying is unlikely to help").
			Evidence(Evidence{Name: "cause unknown", Value: 0.3, Weight: 1}).Impact(0.1, 1)
	}
	return b.Build("toolsvc")
}

func fieldNames(vs []*toolsvcv1.FieldViolation) []any {
	out := make([]any, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.GetField())
	}
	return out
}

func ifElse(c bool, a, b float64) float64 {
	if c {
		return a
	}
	return b
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// violated names the refused fields: "layer", "2 fields: query, limit".
func violated(vs []*toolsvcv1.FieldViolation) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.GetField()
	}
	switch len(names) {
	case 0:
		return "no field named"
	case 1:
		return names[0]
	default:
		return strconv.Itoa(len(names)) + " fields: " + strings.Join(names, ", ")
	}
}
