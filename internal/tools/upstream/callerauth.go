package upstream

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
)

// callerAuth is what a Set needs to carry the caller to its upstreams
// (docs/OPERATIONS.md, "Identity of callers to upstreams").
type callerAuth struct {
	identity *Identity
	now      func() time.Time
	// creds seals callers' own credentials; services are the tools that
	// store them (credtools.go).
	creds    *Credentials
	services []registry.Service
	// exchangers are the token exchanges of the upstreams, by name.
	xmu        sync.Mutex
	exchangers map[string]*exchanger
}

// exchanger returns the token exchange of u.
func (ca *callerAuth) exchanger(u *Upstream) *exchanger {
	ca.xmu.Lock()
	defer ca.xmu.Unlock()
	if ca.exchangers == nil {
		ca.exchangers = map[string]*exchanger{}
	}
	x := ca.exchangers[u.cfg.Name]
	if x == nil {
		x = newExchanger(u.cfg.TokenExchange, u.cfg.Name)
		x.audit = u.auditExchange
		ca.exchangers[u.cfg.Name] = x
	}
	return x
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
				WithDetails(map[string]any{"upstream": u.cfg.Name, "reason": "identity_unavailable"}).NoEffect()
		}
		md.Set(MDIdentity, assertion)
	}
	switch {
	case u.cfg.TokenExchange != nil && ca != nil:
		// The caller's own JWT when it brought one, else toolsvc's
		// assertion of it: both are JWTs the server can verify.
		subjectToken := callctx.SubjectToken(ctx)
		if subjectToken == "" && len(md.Get(MDIdentity)) == 1 {
			subjectToken = md.Get(MDIdentity)[0]
		}
		if subjectToken == "" {
			return toolerr.New(toolerr.Unauthorized, "upstream %s needs a token exchanged for the caller's, and this call has none (bring a JWT, or give toolsvc a --public-url)", u.cfg.Name).
				WithDetails(map[string]any{"upstream": u.cfg.Name, "reason": "no_subject_token"})
		}
		tok, err := ca.exchanger(u).token(ctx, f.Tenant, f.Subject, subjectToken, tokenTypeJWT)
		if err != nil {
			return err
		}
		md.Set("authorization", "Bearer "+tok)
	case u.cfg.UserCredential.Required:
		if ca == nil || ca.creds == nil {
			return toolerr.New(toolerr.Internal, "internal error: upstream %s needs callers' credentials and none can be opened", u.cfg.Name)
		}
		secret, err := ca.creds.open(ctx, f.Tenant, f.Subject, u.cfg.Name)
		if errors.Is(err, errNoCredential) {
			return toolerr.Wrap(err, toolerr.Unauthorized,
				"upstream %s needs your own credential and you have stored none: call %s with {\"upstream\": %q, \"token\": \"<your token>\"} once, then call again",
				u.cfg.Name, ToolSetCredential, u.cfg.Name).
				WithDetails(map[string]any{"upstream": u.cfg.Name, "reason": "user_credential_missing", "tool": ToolSetCredential})
		}
		if err != nil {
			return toolerr.Wrap(err, toolerr.ProviderError, "your credential for upstream %s could not be read; retry", u.cfg.Name).
				WithDetails(map[string]any{"upstream": u.cfg.Name}).NoEffect()
		}
		if u.logger != nil {
			u.logger.LogAttrs(ctx, slog.LevelInfo, "caller's own credential forwarded", slog.String("upstream", u.cfg.Name),
				slog.String("tenant", f.Tenant), slog.String("subject", f.Subject), slog.String("trace_id", f.TraceID))
		}
		if err := u.auditCredentialUse(ctx, f); err != nil {
			return err
		}
		md.Set("authorization", "Bearer "+secret)
	case u.cfg.token != "":
		md.Set("authorization", "Bearer "+u.cfg.token)
	}
	return nil
}

// CodeUserCredentialUsed is the audit record's code of a forwarded call that
// carried the caller's own credential (docs/OPERATIONS.md, "Callers' own
// credentials for upstreams").
const CodeUserCredentialUsed = "USER_CREDENTIAL_USED"

// auditCredentialUse records, before the credential leaves, that the
// caller's own credential goes to this upstream: under the caller's tenant
// and subject, with the tool and the trace, never the credential. Without
// an audit store (the upstream package alone) it records nothing; a
// record that cannot be written stops the call, as a use nobody can find
// later must not happen.
func (u *Upstream) auditCredentialUse(ctx context.Context, f *callctx.Facts) error {
	if u.set == nil || u.set.auditor == nil {
		return nil
	}
	e := &store.AuditEvent{At: time.Now().UTC(), Subject: f.Subject, Tenant: f.Tenant, TraceID: f.TraceID,
		Transport: "upstream " + u.cfg.Name, Decision: store.DecisionAllow, Code: CodeUserCredentialUsed,
		Reason: "the caller's own credential forwarded to upstream " + u.cfg.Name}
	if a := callctx.AdmissionFrom(ctx); a != nil {
		e.Tool, e.ToolVersion = a.Tool, a.Version
	}
	if err := u.set.auditor.AppendAudit(context.WithoutCancel(ctx), e); err != nil {
		return toolerr.Wrap(err, toolerr.ProviderError, "the use of your credential for upstream %s could not be audited; retry", u.cfg.Name).
			WithDetails(map[string]any{"upstream": u.cfg.Name}).NoEffect()
	}
	return nil
}
