// Package toolerr is toolsvc's one error model (docs/ARCHITECTURE.md, seed 002's codes):
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

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
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

// Kinds of error (seed 000).
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
	// NoRetry marks a failure of a retryable code that a retry cannot fix
	// (an upstream's malformed response, its refusal of toolsvc's
	// credential): the ToolError says retryable: false.
	NoRetry bool
	cause   error
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

// Invalid is INVALID_INPUT for one field, named by its JSON path.
func Invalid(field, rule, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	return &Error{
		Code:       InvalidInput,
		Message:    fmt.Sprintf("invalid %s: %s", field, msg),
		Violations: []*toolsvcv1.FieldViolation{{Field: field, Rule: rule, Message: msg}},
	}
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// ToolError renders e as the wire ToolError.
func (e *Error) ToolError(traceID string) *toolsvcv1.ToolError {
	te := &toolsvcv1.ToolError{
		Code:            string(e.Code),
		Message:         e.Message,
		Retryable:       e.Code.Retryable() && !e.NoRetry,
		Kind:            e.Code.Kind(),
		FieldViolations: e.Violations,
		TraceId:         traceID,
	}
	if e.RetryAfter > 0 {
		te.RetryAfterSeconds = e.RetryAfter.Seconds()
	}
	if len(e.Details) > 0 {
		if s, err := structpb.NewStruct(e.Details); err == nil {
			te.Details = s
		}
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
