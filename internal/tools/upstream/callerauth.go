package upstream

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// callerAuth is what a Set needs to carry the caller to its upstreams
// (docs/OPERATIONS.md, "Identity of callers to upstreams").
type callerAuth struct {
	identity *Identity
	now      func() time.Time
}

// WithIdentity signs an assertion of the caller for every forwarded call
// (identity.go). Default: none is sent (tests of the upstream package
// alone); the server always sets it.
func WithIdentity(id *Identity) Option {
	return func(s *Set) { s.callers.identity = id }
}

// authorize adds to md what proves the call to the upstream: toolsvc's
// signed assertion of the caller, and the credential the upstream
// accepts (toolsvc's own, when configured).
func (u *Upstream) authorize(ctx context.Context, f *callctx.Facts, md metadata.MD) error {
	var ca *callerAuth
	if u.set != nil {
		ca = &u.set.callers
	}
	if ca != nil && ca.identity != nil {
		now := time.Now
		if ca.now != nil {
			now = ca.now
		}
		assertion, err := ca.identity.Sign(ctx, ClaimsFor(ctx, f, u.cfg.Name, now(), u.cfg.Identity.TTL))
		if err != nil {
			return toolerr.Wrap(err, toolerr.ProviderError, "toolsvc could not sign the caller's identity for upstream %s", u.cfg.Name).
				WithDetails(map[string]any{"upstream": u.cfg.Name, "reason": "identity_unavailable"})
		}
		md.Set(MDIdentity, assertion)
	}
	if u.cfg.token != "" {
		md.Set("authorization", "Bearer "+u.cfg.token)
	}
	return nil
}
