// Package toolerr is toolsvc's one error model (docs/ARCHITECTURE.md, Errors; docs/REST.md, Errors):
// typed domain errors that tools return, and the single function that turns
// any error into a gRPC status carrying a ToolError, so that every transport
// reports the same code, kind and retryability.
package toolerr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/hints"
)

// Code is a ToolError code.
type Code string

// The codes of the error table of docs/ARCHITECTURE.md.
const (
	InvalidInput  Code = "INVALID_INPUT"
	Unauthorized  Code = "UNAUTHORIZED"
	Forbidden     Code = "FORBIDDEN"
	NotFound      Code = "NOT_FOUND"
	Conflict      Code = "CONFLICT"
	RateLimited   Code = "RATE_LIMITED"
	Timeout       Code = "TIMEOUT"
	ProviderError Code = "PROVIDER_ERROR"
	Internal      Code = "INTERNAL"
)

// Kinds of error (docs/CONTRACTS.md).
const (
	KindValidation = "validation"
	KindBusiness   = "business"
	KindSystem     = "system"
)

type codeInfo struct {
	grpc      codes.Code
	http      int
	retryable bool
	kind      string
}

var table = map[Code]codeInfo{
	InvalidInput:  {codes.InvalidArgument, http.StatusBadRequest, false, KindValidation},
	Unauthorized:  {codes.Unauthenticated, http.StatusUnauthorized, false, KindValidation},
	Forbidden:     {codes.PermissionDenied, http.StatusForbidden, false, KindBusiness},
	NotFound:      {codes.NotFound, http.StatusNotFound, false, KindBusiness},
	Conflict:      {codes.Aborted, http.StatusConflict, true, KindBusiness},
	RateLimited:   {codes.ResourceExhausted, http.StatusTooManyRequests, true, KindSystem},
	Timeout:       {codes.DeadlineExceeded, http.StatusGatewayTimeout, true, KindSystem},
	ProviderError: {codes.Unavailable, http.StatusServiceUnavailable, true, KindSystem},
	Internal:      {codes.Internal, http.StatusInternalServerError, false, KindSystem},
}

// Codes lists every code, in the order of docs/ARCHITECTURE.md's error table.
func Codes() []Code {
	return []Code{InvalidInput, Unauthorized, Forbidden, NotFound, Conflict, RateLimited, Timeout, ProviderError, Internal}
}

// GRPCCode is the gRPC status code of c (Internal for an unknown code).
func (c Code) GRPCCode() codes.Code { return c.info().grpc }

// HTTPStatus is the HTTP status of c.
func (c Code) HTTPStatus() int { return c.info().http }

// Retryable reports whether a call that failed with c may succeed if retried.
func (c Code) Retryable() bool { return c.info().retryable }

// Kind is validation, business or system.
func (c Code) Kind() string { return c.info().kind }

func (c Code) info() codeInfo {
	if i, ok := table[c]; ok {
		return i
	}
	return table[Internal]
}

// FromGRPC maps a gRPC code back to a ToolError code, for statuses that did
// not carry a ToolError (e.g. produced by grpc-go itself).
func FromGRPC(c codes.Code) Code {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
		return InvalidInput
	case codes.Unauthenticated:
		return Unauthorized
	case codes.PermissionDenied:
		return Forbidden
	case codes.NotFound, codes.Unimplemented:
		return NotFound
	case codes.Aborted, codes.AlreadyExists:
		return Conflict
	case codes.ResourceExhausted:
		return RateLimited
	case codes.DeadlineExceeded, codes.Canceled:
		return Timeout
	case codes.Unavailable:
		return ProviderError
	default:
		return Internal
	}
}

// Error is a typed tool error. Tools return it (usually through the
// constructors below); ToStatus turns it into a gRPC status at the boundary.
// Its Message is shown to callers, so it must never hold internals.
type Error struct {
	Code       Code
	Message    string
	Details    map[string]any
	Violations []*toolsvcv1.FieldViolation
	RetryAfter time.Duration
	// Next are actions the tool suggests instead (e.g. query-knowledge
	// after a NOT_FOUND of show-knowledge); they lead the error's hints.
	Next []*toolsvcv1.SuggestedAction
	// Final marks an error that retrying the same call cannot cure, whatever
	// its code (e.g. an idempotency key reused with other arguments).
	Final bool
	// BeforeEffect marks a failure that happened before the tool could
	// have had any effect (an upstream's circuit open, its caller
	// credential or token not obtained): retrying is safe even for a tool
	// with side effects and without an idempotency key.
	BeforeEffect bool
	cause        error
}

// Error implements error.
func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Unwrap returns the cause, which is logged but never shown to callers.
func (e *Error) Unwrap() error { return e.cause }

// New returns an error with code and a caller-safe message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code and message that keeps cause for the log.
func Wrap(cause error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), cause: cause}
}

// NoEffect marks e as a failure before the tool could have had an effect
// (BeforeEffect) and returns it.
func (e *Error) NoEffect() *Error {
	e.BeforeEffect = true
	return e
}

// WithDetails adds machine-readable details and returns e.
func (e *Error) WithDetails(kv map[string]any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	for k, v := range kv {
		e.Details[k] = v
	}
	return e
}

// WithNext suggests an action (usually another tool, with the arguments to
// call it with) to the agent that got e, and returns e.
func (e *Error) WithNext(action, description string, args map[string]any) *Error {
	a := &toolsvcv1.SuggestedAction{Action: action, Priority: hints.High, Description: description, Category: "exploration"}
	if len(args) > 0 {
		if s, err := structpb.NewStruct(args); err == nil {
			a.Data = s
		}
	}
	e.Next = append(e.Next, a)
	return e
}

// Invalid is INVALID_INPUT for one field, named by its JSON path.
func Invalid(field, rule, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{
		Code:       InvalidInput,
		Message:    fmt.Sprintf("invalid %s: %s", field, msg),
		Violations: []*toolsvcv1.FieldViolation{{Field: field, Rule: rule, Message: msg}},
	}
}

// ReasonUnknownTool is the details "reason" of UnknownTool's error.
const ReasonUnknownTool = "unknown_tool"

// UnknownTool is NOT_FOUND for a tool that does not exist for the caller:
// missing, or one it may not see, which answer the same so that a caller
// learns nothing of tools it cannot call. Its details name the tool and
// carry the reason "unknown_tool", by which a transport tells it from a
// tool's own NOT_FOUND (a memory id) and answers in its protocol's way.
func UnknownTool(name string) *Error {
	return New(NotFound, "tool %q does not exist", name).WithDetails(map[string]any{"tool": name, "reason": ReasonUnknownTool})
}

// IsUnknownTool reports whether te is UnknownTool's error, as a transport
// receives it.
func IsUnknownTool(te *toolsvcv1.ToolError) bool {
	return te.GetCode() == string(NotFound) && te.GetDetails().GetFields()["reason"].GetStringValue() == ReasonUnknownTool
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Facts are what the chain knows of a failed call beyond its error: they
// make retryable and the hints true for the tool that failed.
type Facts struct {
	// TraceID of the call.
	TraceID string
	// Tool is the tool called; empty when the call reached no tool.
	Tool string
	// Query is true for tools of category query.
	Query bool
	// Unsafe is true when the tool has side effects and is not idempotent.
	Unsafe bool
	// Ran is true when the tool's handler was entered, so the failure may
	// have had an effect.
	Ran bool
	// Keyed is true when the call carried an idempotency key.
	Keyed bool
	// Metadata is the call's execution metadata; nil leaves it empty.
	Metadata *toolsvcv1.ResultMetadata
}

// ToolError renders e as the wire ToolError of a call that reached no tool.
func (e *Error) ToolError(traceID string) *toolsvcv1.ToolError {
	return e.ToolErrorFor(Facts{TraceID: traceID})
}

// ToolErrorFor renders e as the wire ToolError with the REST error envelope (docs/REST.md, Errors)
// fields, its agent hints and the call's metadata. Retryable is the code's,
// except after a failure that may have had an effect (TIMEOUT,
// PROVIDER_ERROR once the tool ran, unless e is BeforeEffect) on a tool
// that is not idempotent: then only a call with an idempotency key may be
// retried.
func (e *Error) ToolErrorFor(f Facts) *toolsvcv1.ToolError {
	retryable := e.Code.Retryable() && !e.Final
	unsafe := f.Unsafe && f.Ran && !e.BeforeEffect && (e.Code == Timeout || e.Code == ProviderError)
	if unsafe && !f.Keyed {
		retryable = false
	}
	te := &toolsvcv1.ToolError{
		Code:            string(e.Code),
		ErrorCode:       string(e.Code),
		Message:         e.Message,
		Retryable:       retryable,
		Kind:            e.Code.Kind(),
		FieldViolations: e.Violations,
		TraceId:         f.TraceID,
		Metadata:        f.Metadata,
	}
	if e.RetryAfter > 0 {
		te.RetryAfterSeconds = e.RetryAfter.Seconds()
	}
	if len(e.Details) > 0 {
		if s, err := structpb.NewStruct(e.Details); err == nil {
			te.Details = s
		}
	}
	te.AgentHints = hints.ForError(hints.ErrorFacts{
		Code: te.Code, Tool: f.Tool, Query: f.Query, Violations: e.Violations, RetryAfter: e.RetryAfter,
		Retryable: retryable, Unsafe: unsafe, Keyed: f.Keyed, Next: e.Next,
	})
	return te
}

// Complete fills what a ToolError built outside the chain (by a transport
// for its own faults, or synthesized from a bare status) lacks: kind,
// retryable, the envelope's errorCode (docs/REST.md, Errors), agent hints and metadata with the trace
// id. It returns te.
func Complete(te *toolsvcv1.ToolError) *toolsvcv1.ToolError {
	code := Code(te.GetCode())
	if te.GetKind() == "" {
		te.Kind = code.Kind()
		te.Retryable = code.Retryable()
	}
	te.ErrorCode = te.GetCode()
	if te.AgentHints == nil {
		te.AgentHints = hints.ForError(hints.ErrorFacts{
			Code: te.GetCode(), Violations: te.GetFieldViolations(), Retryable: te.GetRetryable(),
			RetryAfter: time.Duration(te.GetRetryAfterSeconds() * float64(time.Second)),
		})
	}
	if te.Metadata == nil {
		te.Metadata = &toolsvcv1.ResultMetadata{Timestamp: timestamppb.Now(), TraceId: te.GetTraceId()}
	}
	return te
}

// Classify turns any error into a *Error: typed errors pass through,
// context errors become TIMEOUT, errors that declare themselves unavailable
// (an Unavailable() bool method, e.g. the store's) become PROVIDER_ERROR, and
// everything else INTERNAL with a generic message (the cause is kept for the
// log only).
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := As(err); ok {
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Wrap(err, Timeout, "the call did not finish before its deadline")
	case errors.Is(err, context.Canceled):
		return Wrap(err, Timeout, "the call was cancelled")
	}
	var u interface{ Unavailable() bool }
	if errors.As(err, &u) && u.Unavailable() {
		return Wrap(err, ProviderError, "the storage provider is unavailable; retry shortly")
	}
	return Wrap(err, Internal, "internal error")
}
