package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/base/traceparent"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// jsonOut renders responses as agents read them: lowerCamelCase names,
// empty lists and zero values present.
var jsonOut = protojson.MarshalOptions{EmitDefaultValues: true}

// apiError is an error the gateway raises itself, before or instead of the
// chain: a ToolError with the HTTP status to answer, which for transport
// faults (405, 408, 413, 415) is not the one of the error code.
type apiError struct {
	status int
	te     *toolsvcv1.ToolError
	allow  []string // Allow header of a 405
}

func (e *apiError) Error() string { return e.te.GetCode() + ": " + e.te.GetMessage() }

// invalid is a 400 INVALID_INPUT; field, when not empty, becomes the one
// field violation, with rule.
func invalid(httpStatus int, field, rule, format string, args ...any) *apiError {
	msg := fmt.Sprintf(format, args...)
	te := &toolsvcv1.ToolError{Code: string(toolerr.InvalidInput), Message: msg}
	if field != "" {
		te.FieldViolations = []*toolsvcv1.FieldViolation{{Field: field, Rule: rule, Message: msg}}
	}
	return &apiError{status: httpStatus, te: te}
}

// errorHandler is grpc-gateway's error handler: every error of a REST call
// (the chain's status, or the gateway's own decoding errors) is written by
// writeError.
func (g *Gateway) errorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	g.writeError(w, r, err)
}

// routingErrorHandler answers what grpc-gateway's router refuses; the route
// table normally answers first, so this is a fallback.
func (g *Gateway) routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	switch httpStatus {
	case http.StatusNotFound:
		g.writeError(w, r, notFound(r))
	case http.StatusMethodNotAllowed:
		g.writeError(w, r, g.methodNotAllowed(r))
	default:
		g.writeError(w, r, invalid(httpStatus, "", "", "bad request: %s", http.StatusText(httpStatus)))
	}
}

func notFound(r *http.Request) *apiError {
	return &apiError{status: http.StatusNotFound, te: &toolsvcv1.ToolError{
		Code: string(toolerr.NotFound), Message: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path),
		Details: mustStruct(map[string]any{"method": r.Method, "path": r.URL.Path}),
	}}
}

func (g *Gateway) methodNotAllowed(r *http.Request) *apiError {
	allow := g.routes.allowed(r.URL.Path)
	return methodNotAllowed(r, allow)
}

func methodNotAllowed(r *http.Request, allow []string) *apiError {
	list := make([]any, len(allow))
	for i, m := range allow {
		list[i] = m
	}
	return &apiError{status: http.StatusMethodNotAllowed, allow: allow, te: &toolsvcv1.ToolError{
		Code:    string(toolerr.InvalidInput),
		Message: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(allow, ", ")),
		Details: mustStruct(map[string]any{"method": r.Method, "allowed": list}),
	}}
}

// writeError writes err as {"error": ToolError} with its HTTP status, and
// Retry-After on 429 and WWW-Authenticate on 401.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	httpStatus, te, retryAfter, allow := g.classify(r, err)
	if te.GetDetails() == nil {
		te.Details = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	if te.GetFieldViolations() == nil {
		te.FieldViolations = []*toolsvcv1.FieldViolation{}
	}
	h := w.Header()
	switch httpStatus {
	case http.StatusTooManyRequests:
		h.Set("Retry-After", strconv.FormatInt(retryAfterSeconds(retryAfter, te.GetRetryAfterSeconds()), 10))
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", g.challenge(r))
	case http.StatusMethodNotAllowed:
		h.Set("Allow", strings.Join(allow, ", "))
	case http.StatusRequestTimeout, http.StatusRequestEntityTooLarge:
		// The rest of the body was not read: the connection cannot be reused.
		h.Set("Connection", "close")
	}
	if httpStatus >= 500 {
		g.cfg.Logger.DebugContext(r.Context(), "REST call failed",
			slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("code", te.GetCode()), slog.String("trace_id", te.GetTraceId()))
	}
	body, merr := errorBody(te)
	if merr != nil {
		body = []byte(`{"success":false,"errorCode":"INTERNAL","message":"internal error","details":{},"retryable":false,` +
			`"error":{"code":"INTERNAL","message":"internal error"}}`)
		httpStatus = http.StatusInternalServerError
	}
	writeJSON(w, httpStatus, body)
}

// errorBody is the REST error body: the REST error envelope (docs/REST.md, Errors) (success,
// errorCode, message, details, retryable) at the top, for clients written
// against the /api/mcp routes, and the whole ToolError under error, as before.
func errorBody(te *toolsvcv1.ToolError) ([]byte, error) {
	full, err := marshalJSON(te)
	if err != nil {
		return nil, err
	}
	details, err := marshalJSON(te.GetDetails())
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Success   bool            `json:"success"`
		ErrorCode string          `json:"errorCode"`
		Message   string          `json:"message"`
		Details   json.RawMessage `json:"details"`
		Retryable bool            `json:"retryable"`
		Error     json.RawMessage `json:"error"`
	}{false, te.GetCode(), te.GetMessage(), details, te.GetRetryable(), full})
}

// classify finds the HTTP status, ToolError, retry delay and allowed
// methods of err.
func (g *Gateway) classify(r *http.Request, err error) (int, *toolsvcv1.ToolError, time.Duration, []string) {
	var ae *apiError
	if errors.As(err, &ae) {
		te := ae.te
		if te.GetTraceId() == "" {
			te.TraceId = traceID(r)
		}
		return ae.status, toolerr.Complete(te), 0, ae.allow
	}
	var hse *runtime.HTTPStatusError
	if errors.As(err, &hse) {
		return g.classify(r, invalid(hse.HTTPStatus, "", "", "bad request path: %s", http.StatusText(hse.HTTPStatus)))
	}
	st := status.Convert(err)
	for _, d := range st.Details() {
		if te, ok := d.(*toolsvcv1.ToolError); ok {
			return toolerr.Code(te.GetCode()).HTTPStatus(), te, toolerr.RetryAfter(st), nil
		}
	}
	// A status without a ToolError did not come from the chain (which always
	// attaches one): grpc-gateway raised it while decoding the request.
	te := toolerr.FromStatus(st)
	if toolerr.Code(te.GetCode()) == toolerr.InvalidInput {
		te = decodeError(st.Message())
	}
	te.TraceId = traceID(r)
	te.AgentHints, te.Metadata = nil, nil // made again for the field violations and trace id found here
	return toolerr.Code(te.GetCode()).HTTPStatus(), toolerr.Complete(te), toolerr.RetryAfter(st), nil
}

var (
	reUnknownField   = regexp.MustCompile(`unknown field "?([^"\s]+)"?`)
	reDuplicateField = regexp.MustCompile(`duplicate field "?([^"\s]+)"?`)
	reInvalidValue   = regexp.MustCompile(`invalid value for (\S+) field (\S+): (.*)`)
	reParsingField   = regexp.MustCompile(`parsing (?:field|list) "([^"]+)": (.*)`)
)

// decodeError turns grpc-gateway's request decoding error (protojson or
// query parameter parsing) into INVALID_INPUT naming the field and the
// problem, without Go internals.
func decodeError(msg string) *toolsvcv1.ToolError {
	msg = toolerr.DecodeReason(msg)
	te := &toolsvcv1.ToolError{
		Code: string(toolerr.InvalidInput), Kind: toolerr.InvalidInput.Kind(),
		Message: "invalid request: " + msg,
	}
	violation := func(field, rule, m string) {
		te.FieldViolations = []*toolsvcv1.FieldViolation{{Field: field, Rule: rule, Message: m}}
	}
	switch {
	case reUnknownField.MatchString(msg):
		f := reUnknownField.FindStringSubmatch(msg)[1]
		te.Message = fmt.Sprintf("invalid request: unknown field %q", f)
		violation(f, "json.unknown_field", "unknown field: remove it or check its spelling")
	case reDuplicateField.MatchString(msg):
		f := reDuplicateField.FindStringSubmatch(msg)[1]
		violation(f, "json.duplicate_field", "the field is given more than once")
	case reInvalidValue.MatchString(msg):
		m := reInvalidValue.FindStringSubmatch(msg)
		te.Message = fmt.Sprintf("invalid request: field %s wants a %s value, got %s", m[2], m[1], m[3])
		violation(m[2], "json.type", fmt.Sprintf("want a %s value, got %s", m[1], m[3]))
	case reParsingField.MatchString(msg):
		m := reParsingField.FindStringSubmatch(msg)
		f := lowerCamel(m[1])
		te.Message = fmt.Sprintf("invalid request: parameter %s: %s", f, lastClause(m[2]))
		violation(f, "query.type", lastClause(m[2]))
	}
	return te
}

// lastClause keeps the reason of a wrapped Go error:
// `strconv.ParseInt: parsing "x": invalid syntax` -> `invalid syntax ("x")`.
func lastClause(msg string) string {
	parts := strings.Split(msg, ": ")
	last := parts[len(parts)-1]
	if len(parts) >= 2 {
		if v, ok := strings.CutPrefix(parts[len(parts)-2], "parsing "); ok {
			return fmt.Sprintf("%s (%s)", last, v)
		}
	}
	return last
}

// lowerCamel converts a proto field name to its JSON name.
func lowerCamel(s string) string {
	var b strings.Builder
	up := false
	for _, c := range s {
		switch {
		case c == '_':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(c)))
			up = false
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// retryAfterSeconds is the Retry-After value: whole seconds, rounded up,
// at least 1.
func retryAfterSeconds(d time.Duration, seconds float64) int64 {
	if d <= 0 {
		d = time.Duration(seconds * float64(time.Second))
	}
	s := int64(math.Ceil(d.Seconds()))
	return max(s, 1)
}

// challenge is the WWW-Authenticate value of a 401 (RFC 6750, RFC 9728).
func (g *Gateway) challenge(r *http.Request) string {
	c := `Bearer realm="toolsvc"`
	if r.Header.Get("Authorization") != "" {
		c += `, error="invalid_token"`
	}
	if g.cfg.ResourceMetadata != "" {
		c += `, resource_metadata="` + g.cfg.ResourceMetadata + `"`
	}
	return c
}

// traceID is the trace id of an error the gateway raises itself: the one of
// the caller's traceparent, or a new one.
func traceID(r *http.Request) string {
	return traceparent.TraceIDOrNew(r.Header.Get(wire.HeaderTraceparent))
}

func mustStruct(m map[string]any) *structpb.Struct {
	s, err := structpb.NewStruct(m)
	if err != nil {
		return &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	return s
}

// writeJSON writes a JSON response assembled from parts.
func writeJSON(w http.ResponseWriter, httpStatus int, parts ...[]byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	if httpStatus >= 400 {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(httpStatus)
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return
		}
	}
}
