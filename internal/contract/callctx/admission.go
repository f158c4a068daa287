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
