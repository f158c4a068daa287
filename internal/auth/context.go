package auth

import "context"

type principalKey struct{}

// NewContext returns a copy of ctx carrying p, for handlers downstream of the
// authentication interceptor.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal stored by [NewContext], and false when
// there is none.
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}
