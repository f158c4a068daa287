package callctx

import "context"

// Admission is what the chain decided to let through: the tool called and
// the permissions that admitted the call (the tool's own, each held by
// the caller). Forwarding to an upstream asserts exactly this
// (docs/OPERATIONS.md, "Identity of callers to upstreams"), never the
// caller's other grants.
type Admission struct {
	Tool, Version string
	Permissions   []string
	// Run runs the admitted tool with the typed request the chain
	// resolved for a call of ToolService.CallTool (its JSON arguments
	// decoded into the tool's request), which the tool service then
	// answers with; nil for a call of the tool's own RPC, which gRPC hands
	// to the tool's handler.
	Run func(ctx context.Context) (any, error)
}

type admissionKey struct{}

// WithAdmission returns ctx carrying a; the chain calls it once its
// policy allowed the call.
func WithAdmission(ctx context.Context, a *Admission) context.Context {
	return context.WithValue(ctx, admissionKey{}, a)
}

// AdmissionFrom returns the call's admission, or nil before the policy
// allowed it.
func AdmissionFrom(ctx context.Context) *Admission {
	a, _ := ctx.Value(admissionKey{}).(*Admission)
	return a
}

type subjectTokenKey struct{}

// WithSubjectToken returns ctx carrying the JWT the caller authenticated
// with; the chain sets it for JWT callers only. Forwarding to an upstream
// with token exchange uses it as the subject token; nothing else may read
// it, and it is never logged.
func WithSubjectToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, subjectTokenKey{}, token)
}

// SubjectToken returns the caller's JWT, or "" when it brought none.
func SubjectToken(ctx context.Context) string {
	t, _ := ctx.Value(subjectTokenKey{}).(string)
	return t
}
