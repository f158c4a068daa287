package toolerr_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// The table of docs/ARCHITECTURE.md ("Errors"), row by row.
func TestCodeTable(t *testing.T) {
	tests := []struct {
		code      toolerr.Code
		grpc      codes.Code
		http      int
		retryable bool
		kind      string
	}{
		{toolerr.InvalidInput, codes.InvalidArgument, http.StatusBadRequest, false, toolerr.KindValidation},
		{toolerr.Unauthorized, codes.Unauthenticated, http.StatusUnauthorized, false, toolerr.KindValidation},
		{toolerr.Forbidden, codes.PermissionDenied, http.StatusForbidden, false, toolerr.KindBusiness},
		{toolerr.NotFound, codes.NotFound, http.StatusNotFound, false, toolerr.KindBusiness},
		{toolerr.Conflict, codes.Aborted, http.StatusConflict, true, toolerr.KindBusiness},
		{toolerr.RateLimited, codes.ResourceExhausted, http.StatusTooManyRequests, true, toolerr.KindSystem},
		{toolerr.Timeout, codes.DeadlineExceeded, http.StatusGatewayTimeout, true, toolerr.KindSystem},
		{toolerr.ProviderError, codes.Unavailable, http.StatusServiceUnavailable, true, toolerr.KindSystem},
		{toolerr.Internal, codes.Internal, http.StatusInternalServerError, false, toolerr.KindSystem},
	}
	if got := len(toolerr.Codes()); got != len(tests) {
		t.Fatalf("Codes() lists %d codes, the table %d", got, len(tests))
	}
	for i, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			if toolerr.Codes()[i] != tt.code {
				t.Errorf("Codes()[%d] = %s, want %s (the documented order)", i, toolerr.Codes()[i], tt.code)
			}
			if tt.code.GRPCCode() != tt.grpc || tt.code.HTTPStatus() != tt.http ||
				tt.code.Retryable() != tt.retryable || tt.code.Kind() != tt.kind {
				t.Errorf("%s = (%v, %d, %v, %s), want (%v, %d, %v, %s)", tt.code,
					tt.code.GRPCCode(), tt.code.HTTPStatus(), tt.code.Retryable(), tt.code.Kind(),
					tt.grpc, tt.http, tt.retryable, tt.kind)
			}
			if back := toolerr.FromGRPC(tt.grpc); back != tt.code {
				t.Errorf("FromGRPC(%v) = %s, want %s", tt.grpc, back, tt.code)
			}
		})
	}
	if c := toolerr.Code("NO_SUCH_CODE"); c.GRPCCode() != codes.Internal || c.Retryable() {
		t.Errorf("an unknown code maps as %v retryable=%v, want Internal, not retryable", c.GRPCCode(), c.Retryable())
	}
}

func TestFromGRPCFoldsCodesWithoutAToolError(t *testing.T) {
	for in, want := range map[codes.Code]toolerr.Code{
		codes.OutOfRange: toolerr.InvalidInput, codes.FailedPrecondition: toolerr.InvalidInput,
		codes.Unimplemented: toolerr.NotFound, codes.AlreadyExists: toolerr.Conflict,
		codes.Canceled: toolerr.Timeout, codes.Unknown: toolerr.Internal, codes.DataLoss: toolerr.Internal,
	} {
		if got := toolerr.FromGRPC(in); got != want {
			t.Errorf("FromGRPC(%v) = %s, want %s", in, got, want)
		}
	}
}

type unavailable struct{}

func (unavailable) Error() string     { return "dial tcp 10.0.0.1:5432: connection refused" }
func (unavailable) Unavailable() bool { return true }

func TestClassify(t *testing.T) {
	typed := toolerr.New(toolerr.NotFound, "no memory mem_1")
	tests := []struct {
		name string
		err  error
		code toolerr.Code
		msg  string
	}{
		{"typed passes through", fmt.Errorf("lookup: %w", typed), toolerr.NotFound, "no memory mem_1"},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), toolerr.Timeout, "the call did not finish before its deadline"},
		{"cancelled", context.Canceled, toolerr.Timeout, "the call was cancelled"},
		{"unavailable store", fmt.Errorf("open: %w", unavailable{}), toolerr.ProviderError, "the storage provider is unavailable; retry shortly"},
		{"anything else hides its text", errors.New("pq: relation \"memories\" does not exist"), toolerr.Internal, "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := toolerr.Classify(tt.err)
			if e.Code != tt.code || e.Message != tt.msg {
				t.Fatalf("Classify = %s %q, want %s %q", e.Code, e.Message, tt.code, tt.msg)
			}
			if !errors.Is(e, tt.err) && !errors.Is(tt.err, e) {
				t.Errorf("the cause is not kept for the log: %v", e)
			}
		})
	}
	if toolerr.Classify(nil) != nil {
		t.Error("Classify(nil) is not nil")
	}
}

// Retryable is the code's, except where a retry cannot help or may repeat
// an effect.
func TestToolErrorForRetryable(t *testing.T) {
	tests := []struct {
		name  string
		err   *toolerr.Error
		facts toolerr.Facts
		want  bool
	}{
		{"rate limited", toolerr.New(toolerr.RateLimited, "slow down"), toolerr.Facts{}, true},
		{"invalid input", toolerr.Invalid("query", "string.min_len", "must not be empty"), toolerr.Facts{}, false},
		{"final conflict", &toolerr.Error{Code: toolerr.Conflict, Message: "key reused", Final: true}, toolerr.Facts{}, false},
		{"timeout before the tool ran", toolerr.New(toolerr.Timeout, "late"), toolerr.Facts{Unsafe: true}, true},
		{"timeout after an unsafe tool ran, no key", toolerr.New(toolerr.Timeout, "late"), toolerr.Facts{Unsafe: true, Ran: true}, false},
		{"timeout after an unsafe tool ran, keyed", toolerr.New(toolerr.Timeout, "late"), toolerr.Facts{Unsafe: true, Ran: true, Keyed: true}, true},
		{"provider error after an unsafe tool ran", toolerr.New(toolerr.ProviderError, "down"), toolerr.Facts{Unsafe: true, Ran: true}, false},
		{"provider error after a safe tool ran", toolerr.New(toolerr.ProviderError, "down"), toolerr.Facts{Ran: true}, true},
		{"provider error of an unsafe tool before its effect", toolerr.New(toolerr.ProviderError, "circuit open").NoEffect(), toolerr.Facts{Unsafe: true, Ran: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := tt.err.ToolErrorFor(tt.facts)
			if te.GetRetryable() != tt.want {
				t.Errorf("retryable = %v, want %v", te.GetRetryable(), tt.want)
			}
			if te.GetCode() != string(tt.err.Code) || te.GetErrorCode() != te.GetCode() || te.GetKind() != tt.err.Code.Kind() {
				t.Errorf("envelope = code %q errorCode %q kind %q", te.GetCode(), te.GetErrorCode(), te.GetKind())
			}
			if te.GetAgentHints() == nil {
				t.Error("no agent hints")
			}
		})
	}
}

func TestStatusRoundTrip(t *testing.T) {
	e := toolerr.Invalid("tags[0]", "string.pattern", "must be kebab-case").WithDetails(map[string]any{"value": "Bad Tag"})
	e.RetryAfter = 0
	st := toolerr.ToStatus(fmt.Errorf("handler: %w", e), "trace-1")
	if st.Code() != codes.InvalidArgument {
		t.Fatalf("status code = %v", st.Code())
	}
	te := toolerr.FromStatus(st)
	if te.GetTraceId() != "trace-1" || len(te.GetFieldViolations()) != 1 || te.GetFieldViolations()[0].GetField() != "tags[0]" {
		t.Fatalf("ToolError lost its facts: %v", te)
	}
	if te.GetDetails().GetFields()["value"].GetStringValue() != "Bad Tag" {
		t.Errorf("details = %v", te.GetDetails())
	}

	limited := toolerr.New(toolerr.RateLimited, "30 calls a minute")
	limited.RetryAfter = 1500 * time.Millisecond
	st = toolerr.ToStatus(limited, "")
	if got := toolerr.RetryAfter(st); got != 1500*time.Millisecond {
		t.Errorf("RetryAfter = %v, want 1.5s", got)
	}
	if got := toolerr.FromStatus(st).GetRetryAfterSeconds(); got != 1.5 {
		t.Errorf("retryAfterSeconds = %v", got)
	}
}

func TestFromStatusWithoutAToolError(t *testing.T) {
	tests := []struct {
		name      string
		st        *status.Status
		code      toolerr.Code
		msg       string
		retryable bool
	}{
		{"grpc-go's size limit cannot be retried", status.New(codes.ResourceExhausted, "grpc: received message larger than max (5000000 vs. 4194304)"),
			toolerr.InvalidInput, "the request is larger than the server accepts", false},
		{"unavailable", status.New(codes.Unavailable, "connection closed"), toolerr.ProviderError, "connection closed", true},
		{"internal text is hidden", status.New(codes.Internal, "panic: runtime error at /src/x.go:12"), toolerr.Internal, "internal error", false},
		{"empty message", status.New(codes.NotFound, ""), toolerr.NotFound, "internal error", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			te := toolerr.FromStatus(tt.st)
			if te.GetCode() != string(tt.code) || te.GetMessage() != tt.msg || te.GetRetryable() != tt.retryable {
				t.Errorf("FromStatus = %s %q retryable=%v, want %s %q %v", te.GetCode(), te.GetMessage(), te.GetRetryable(), tt.code, tt.msg, tt.retryable)
			}
			if te.GetAgentHints() == nil || te.GetMetadata().GetTimestamp() == nil {
				t.Error("a synthesized ToolError lacks hints or metadata")
			}
		})
	}
	long := status.New(codes.Unavailable, "line one\nline two "+string(make([]byte, 400)))
	if m := toolerr.FromStatus(long).GetMessage(); len(m) > 310 || containsNewline(m) {
		t.Errorf("a transport message is not kept short and single-line: %d bytes", len(m))
	}
}

func containsNewline(s string) bool {
	for _, r := range s {
		if r == '\n' {
			return true
		}
	}
	return false
}

func TestWithNextLeadsTheHints(t *testing.T) {
	e := toolerr.New(toolerr.NotFound, "no item adr-1").WithNext("query-knowledge", "search for the item", map[string]any{"query": "adr-1"})
	te := e.ToolErrorFor(toolerr.Facts{Tool: "show-knowledge"})
	acts := te.GetAgentHints().GetSuggestedNextActions()
	if len(acts) == 0 || acts[0].GetAction() != "query-knowledge" {
		t.Fatalf("first suggested action = %v, want query-knowledge", acts)
	}
	if acts[0].GetData().GetFields()["query"].GetStringValue() != "adr-1" {
		t.Errorf("the suggestion's arguments were lost: %v", acts[0].GetData())
	}
}

// TestUnknownToolIsRecognisedByItsReason: the unknown-tool error is told
// from other NOT_FOUND errors by its reason, not its text, after the trip
// through a ToolError that every transport makes.
func TestUnknownToolIsRecognisedByItsReason(t *testing.T) {
	te := toolerr.UnknownTool("get-weather").ToolError("t1")
	if !toolerr.IsUnknownTool(te) {
		t.Fatalf("IsUnknownTool(%v) = false", te)
	}
	if got := te.GetDetails().GetFields()["tool"].GetStringValue(); got != "get-weather" {
		t.Fatalf("details.tool = %q", got)
	}
	for _, other := range []*toolerr.Error{
		toolerr.New(toolerr.NotFound, "tool %q does not exist", "get-weather"), // the same text, no reason
		toolerr.New(toolerr.NotFound, "memory %q does not exist", "m1").WithDetails(map[string]any{"reason": "gone"}),
		toolerr.New(toolerr.InvalidInput, "x").WithDetails(map[string]any{"reason": toolerr.ReasonUnknownTool}),
	} {
		if toolerr.IsUnknownTool(other.ToolError("t1")) {
			t.Errorf("IsUnknownTool(%v) = true", other)
		}
	}
}
