package toolerr

import (
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// ToStatus is the one place an error becomes a gRPC status: the ToolError
// travels in the status details (and RetryInfo for RATE_LIMITED), so gRPC,
// REST and MCP callers all read the same error.
func ToStatus(err error, traceID string) *status.Status {
	return StatusFor(err, Facts{TraceID: traceID})
}

// StatusFor is ToStatus for a call the chain knows the facts of (the tool,
// whether it ran, the idempotency key): see ToolErrorFor.
func StatusFor(err error, f Facts) *status.Status {
	e := Classify(err)
	st := status.New(e.Code.GRPCCode(), e.Message)
	details := []protoadapt.MessageV1{e.ToolErrorFor(f)}
	if e.RetryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(e.RetryAfter)})
	}
	if withDetails, derr := st.WithDetails(details...); derr == nil {
		return withDetails
	}
	return st
}

// FromStatus extracts the ToolError of st, or synthesizes one from the gRPC
// code for statuses raised outside toolsvc's handlers (e.g. by grpc-go).
func FromStatus(st *status.Status) *toolsvcv1.ToolError {
	for _, d := range st.Details() {
		if te, ok := d.(*toolsvcv1.ToolError); ok {
			return te
		}
	}
	code := FromGRPC(st.Code())
	msg := st.Message()
	if st.Code() == codes.ResourceExhausted && strings.Contains(msg, "larger than max") {
		// grpc-go's own message size limit: retrying cannot help.
		code, msg = InvalidInput, "the request is larger than the server accepts"
	}
	if code == Internal || msg == "" {
		msg = "internal error"
	}
	return Complete(&toolsvcv1.ToolError{Code: string(code), Message: sanitize(msg), Retryable: code.Retryable(), Kind: code.Kind()})
}

// RetryAfter returns the retry delay a status carries, if any.
func RetryAfter(st *status.Status) time.Duration {
	for _, d := range st.Details() {
		switch v := d.(type) {
		case *errdetails.RetryInfo:
			return v.GetRetryDelay().AsDuration()
		case *toolsvcv1.ToolError:
			if v.GetRetryAfterSeconds() > 0 {
				return time.Duration(v.GetRetryAfterSeconds() * float64(time.Second))
			}
		}
	}
	return 0
}

// sanitize keeps transport-produced messages short and single-line.
func sanitize(msg string) string {
	msg = strings.ReplaceAll(msg, "\n", " ")
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}
