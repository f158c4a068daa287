package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// Code is a ToolError code (docs/REST.md, Errors): what kind of failure a
// call had, the same on every transport.
type Code string

// The codes of toolsvc's error table, with the gRPC code each travels as.
const (
	// CodeInvalidInput (INVALID_ARGUMENT): the arguments broke the tool's
	// contract; [Error.FieldViolations] names each field. Not retryable.
	CodeInvalidInput Code = "INVALID_INPUT"
	// CodeUnauthorized (UNAUTHENTICATED): no credential, or one the server
	// does not accept. Not retryable.
	CodeUnauthorized Code = "UNAUTHORIZED"
	// CodeForbidden (PERMISSION_DENIED): a policy refused a tool the caller
	// can see (tenant, read-only credential). Not retryable.
	CodeForbidden Code = "FORBIDDEN"
	// CodeNotFound (NOT_FOUND): the tool, or what the call names, does not
	// exist for this caller; a tool the caller lacks a permission for
	// answers the same. Not retryable.
	CodeNotFound Code = "NOT_FOUND"
	// CodeConflict (ABORTED): retryable, unless the server says otherwise
	// (an idempotency key reused with other arguments, or the outcome of
	// its first call unknown).
	CodeConflict Code = "CONFLICT"
	// CodeRateLimited (RESOURCE_EXHAUSTED): refused before the tool ran;
	// retryable after [Error.RetryAfter].
	CodeRateLimited Code = "RATE_LIMITED"
	// CodeTimeout (DEADLINE_EXCEEDED): the deadline passed.
	CodeTimeout Code = "TIMEOUT"
	// CodeProviderError (UNAVAILABLE): the server or a dependency of it was
	// unavailable; retryable when the server says so.
	CodeProviderError Code = "PROVIDER_ERROR"
	// CodeInternal (INTERNAL): a fault of the server, never retried; find it
	// in the server's logs by [Error.TraceID].
	CodeInternal Code = "INTERNAL"
)

// Error is every failure of a call made through a [Client]: the ToolError
// the server sent in the gRPC status details, or one made the same way
// from the gRPC code when the failure never reached toolsvc (the
// connection, the deadline). Read it with errors.As:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Code == client.CodeInvalidInput { ... }
//
// status.Code and status.FromError read it too (it has GRPCStatus), and
// errors.Is(err, context.Canceled) holds when the caller's context ended
// the call.
type Error struct {
	// Code is the ToolError code.
	Code Code
	// Message says what went wrong; it never holds the server's internals.
	Message string
	// Kind is validation, business or system.
	Kind string
	// Retryable is the server's word on whether the same call may succeed
	// if made again (for a mutation: with the same idempotency key).
	Retryable bool
	// RetryAfter is how long the server asked the caller to wait before
	// retrying (RATE_LIMITED, overload); zero when it said nothing.
	RetryAfter time.Duration
	// FieldViolations name the input fields that failed validation, with
	// the rule each broke (INVALID_INPUT).
	FieldViolations []*toolsvcv1.FieldViolation
	// Details are the ToolError's machine-readable details, as JSON values.
	Details map[string]any
	// Hints are what the server suggests doing next (which field to fix,
	// which tool to call instead, whether retrying is safe); nil when the
	// failure never reached toolsvc.
	Hints *toolsvcv1.AgentHints
	// Metadata is the failed call's execution metadata (tool, version,
	// trace and correlation ids, the idempotency key); nil when the failure
	// never reached toolsvc.
	Metadata *toolsvcv1.ResultMetadata
	// TraceID finds the call in the server's logs.
	TraceID string
	// Attempts is how many times the client sent the call (1 when it was
	// not retried).
	Attempts int

	status *status.Status
	cause  error
}

// Error implements error: the code and message, as "CODE: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	b.WriteString(": ")
	b.WriteString(e.Message)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap returns the context's error when the caller's context ended the
// call, so that errors.Is(err, context.DeadlineExceeded) holds; nil
// otherwise.
func (e *Error) Unwrap() error { return e.cause }

// GRPCStatus returns the gRPC status the error was read from, details
// included, for code that inspects errors with package status.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// ToolError returns the error as the protocol's ToolError message, for
// passing it on (to an agent, in a log) in the shape every transport uses.
func (e *Error) ToolError() *toolsvcv1.ToolError {
	if e.status != nil {
		for _, d := range e.status.Details() {
			if te, ok := d.(*toolsvcv1.ToolError); ok {
				return te
			}
		}
	}
	return &toolsvcv1.ToolError{Code: string(e.Code), ErrorCode: string(e.Code), Message: e.Message, Kind: e.Kind,
		Retryable: e.Retryable, RetryAfterSeconds: e.RetryAfter.Seconds(), FieldViolations: e.FieldViolations, TraceId: e.TraceID}
}

// codeInfo is what the error table says of a code that arrived without a
// ToolError: its gRPC code, whether it is retryable and its kind.
type codeInfo struct {
	grpc      codes.Code
	retryable bool
	kind      string
}

// table is docs/ARCHITECTURE.md's error table (the server's
// internal/contract/toolerr; a test keeps the two equal).
var table = map[Code]codeInfo{
	CodeInvalidInput:  {codes.InvalidArgument, false, "validation"},
	CodeUnauthorized:  {codes.Unauthenticated, false, "validation"},
	CodeForbidden:     {codes.PermissionDenied, false, "business"},
	CodeNotFound:      {codes.NotFound, false, "business"},
	CodeConflict:      {codes.Aborted, true, "business"},
	CodeRateLimited:   {codes.ResourceExhausted, true, "system"},
	CodeTimeout:       {codes.DeadlineExceeded, true, "system"},
	CodeProviderError: {codes.Unavailable, true, "system"},
	CodeInternal:      {codes.Internal, false, "system"},
}

// codeOf maps a gRPC code to a ToolError code, as the server does for
// statuses it did not raise itself.
func codeOf(c codes.Code) Code {
	switch c {
	case codes.InvalidArgument, codes.OutOfRange, codes.FailedPrecondition:
		return CodeInvalidInput
	case codes.Unauthenticated:
		return CodeUnauthorized
	case codes.PermissionDenied:
		return CodeForbidden
	case codes.NotFound, codes.Unimplemented:
		return CodeNotFound
	case codes.Aborted, codes.AlreadyExists:
		return CodeConflict
	case codes.ResourceExhausted:
		return CodeRateLimited
	case codes.DeadlineExceeded, codes.Canceled:
		return CodeTimeout
	case codes.Unavailable:
		return CodeProviderError
	default:
		return CodeInternal
	}
}

// errorFrom reads err, as grpc-go returned it for one attempt, into an
// *Error. ctx is the caller's context: when it has ended, the error says so
// and unwraps to ctx.Err().
func errorFrom(ctx context.Context, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	st := status.Convert(err)
	e = &Error{status: st, Message: st.Message()}
	var te *toolsvcv1.ToolError
	for _, d := range st.Details() {
		switch v := d.(type) {
		case *toolsvcv1.ToolError:
			te = v
		case *errdetails.RetryInfo:
			e.RetryAfter = v.GetRetryDelay().AsDuration()
		}
	}
	if te != nil {
		e.Code, e.Message, e.Kind, e.Retryable = Code(te.GetCode()), te.GetMessage(), te.GetKind(), te.GetRetryable()
		e.FieldViolations, e.Hints, e.Metadata, e.TraceID = te.GetFieldViolations(), te.GetAgentHints(), te.GetMetadata(), te.GetTraceId()
		e.Details = te.GetDetails().AsMap()
		if e.RetryAfter == 0 && te.GetRetryAfterSeconds() > 0 {
			e.RetryAfter = time.Duration(te.GetRetryAfterSeconds() * float64(time.Second))
		}
	} else {
		// Raised outside toolsvc's chain: by grpc-go (the connection, a
		// deadline, a message too large) or by a proxy in between.
		e.Code = codeOf(st.Code())
		if st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max") {
			e.Code = CodeInvalidInput // grpc-go's message size limit: retrying cannot help
		}
		info := table[e.Code]
		e.Retryable, e.Kind = info.retryable, info.kind
		if e.Message == "" {
			e.Message = strings.ToLower(st.Code().String())
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		// The caller's context ended the call: nothing to retry, and the
		// caller may ask errors.Is(err, context.Canceled).
		e.cause, e.Retryable = cerr, false
	}
	return e
}

// CodeOf returns the ToolError code of err: "" for nil, CodeInternal for an
// error that is not an [*Error] (nor a gRPC status).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if st, ok := status.FromError(err); ok {
		return codeOf(st.Code())
	}
	return CodeInternal
}

// IsInvalidInput reports whether err is INVALID_INPUT.
func IsInvalidInput(err error) bool { return CodeOf(err) == CodeInvalidInput }

// IsUnauthorized reports whether err is UNAUTHORIZED: no credential or a
// refused one.
func IsUnauthorized(err error) bool { return CodeOf(err) == CodeUnauthorized }

// IsForbidden reports whether err is FORBIDDEN.
func IsForbidden(err error) bool { return CodeOf(err) == CodeForbidden }

// IsNotFound reports whether err is NOT_FOUND (an unknown tool included).
func IsNotFound(err error) bool { return CodeOf(err) == CodeNotFound }

// IsConflict reports whether err is CONFLICT.
func IsConflict(err error) bool { return CodeOf(err) == CodeConflict }

// IsRateLimited reports whether err is RATE_LIMITED.
func IsRateLimited(err error) bool { return CodeOf(err) == CodeRateLimited }

// IsTimeout reports whether err is TIMEOUT.
func IsTimeout(err error) bool { return CodeOf(err) == CodeTimeout }

// IsProviderError reports whether err is PROVIDER_ERROR.
func IsProviderError(err error) bool { return CodeOf(err) == CodeProviderError }

// IsInternal reports whether err is INTERNAL.
func IsInternal(err error) bool { return CodeOf(err) == CodeInternal }

// IsRetryable reports whether err is an [*Error] the server marked
// retryable (the client has already retried it as far as it was allowed).
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}
