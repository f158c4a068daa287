package auth

import "fmt"

// Reason classifies why a request could not be authenticated. Callers branch
// on it (for example to choose a log level); all reasons map to
// UNAUTHENTICATED at the transport boundary.
type Reason int

// The reasons an authentication fails.
const (
	// MissingCredentials: no authorization header, or an empty one.
	MissingCredentials Reason = iota + 1
	// MalformedCredentials: not "Bearer <token>", a token over 8 KiB, or a
	// JWT that cannot be decoded.
	MalformedCredentials
	// InvalidCredentials: unknown API key, bad signature, unknown key id,
	// or a token lacking a required claim.
	InvalidCredentials
	// ExpiredCredentials: the JWT's exp is in the past (beyond the leeway).
	ExpiredCredentials
	// NotYetValid: the JWT's nbf or iat is in the future (beyond the leeway).
	NotYetValid
	// WrongAudience: the JWT was not issued for this service.
	WrongAudience
	// WrongIssuer: the JWT was issued by an issuer other than the configured one.
	WrongIssuer
	// DisallowedAlgorithm: the JWT's alg is not in the allowlist (none and
	// HS* never are).
	DisallowedAlgorithm
	// MissingTenant: the credentials are valid but name no tenant.
	MissingTenant
)

var reasonNames = map[Reason]string{
	MissingCredentials:   "missing credentials",
	MalformedCredentials: "malformed credentials",
	InvalidCredentials:   "invalid credentials",
	ExpiredCredentials:   "expired credentials",
	NotYetValid:          "credentials not yet valid",
	WrongAudience:        "credentials issued for another audience",
	WrongIssuer:          "credentials from an untrusted issuer",
	DisallowedAlgorithm:  "credentials signed with a disallowed algorithm",
	MissingTenant:        "credentials name no tenant",
}

// String returns a short human-readable description of the reason, safe to
// show a caller.
func (r Reason) String() string {
	if s, ok := reasonNames[r]; ok {
		return s
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// Error is the error returned by [Authenticator.Authenticate]. Its Error text
// is derived from Reason alone and is safe to return to the caller; Detail is
// more specific, meant for logs, and never contains the token or key either.
type Error struct {
	// Reason is what went wrong, for branching.
	Reason Reason
	// Detail says more precisely what was wrong (e.g. "unknown key id").
	Detail string
}

// Error returns "unauthenticated: <reason>".
func (e *Error) Error() string {
	return "unauthenticated: " + e.Reason.String()
}

// Is reports whether target is an *Error with the same Reason and an empty
// Detail, so that errors.Is(err, &auth.Error{Reason: auth.ExpiredCredentials})
// works as a reason check.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Detail == "" && t.Reason == e.Reason
}

func newError(r Reason, detail string) *Error {
	return &Error{Reason: r, Detail: detail}
}
