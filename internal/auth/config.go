package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
)

// Defaults applied to a [JWTConfig] field left empty.
const (
	DefaultTenantClaim      = "tenant"
	DefaultPermissionsClaim = "permissions"
	DefaultSubjectClaim     = "sub"
)

// MaxLeeway bounds JWTConfig.Leeway: more clock skew than this is a
// misconfiguration that would keep expired tokens alive.
const MaxLeeway = 5 * time.Minute

// DefaultAlgorithms returns the JWT algorithms accepted when
// JWTConfig.Algorithms is empty.
func DefaultAlgorithms() []string {
	return []string{"RS256", "RS384", "RS512", "ES256", "ES384", "PS256", "EdDSA"}
}

// supportedAlgorithms are the asymmetric algorithms an allowlist may name.
// HMAC and none are absent on purpose: with a public JWKS, an HMAC "secret"
// would be public.
var supportedAlgorithms = []string{
	"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
}

// Config is an auth file: the API keys and the JWT issuer this service trusts.
// Build it with [LoadFile], or in code and check it with [Config.Validate].
type Config struct {
	// APIKeys are the accepted API keys and the principal each one becomes.
	APIKeys []APIKeyConfig `yaml:"api_keys"`
	// JWT, when set, accepts JWTs from one issuer.
	JWT *JWTConfig `yaml:"jwt"`
	// ClientCerts map client certificates verified by mutual TLS
	// (--tls-client-ca) to principals, as API keys do.
	ClientCerts []ClientCertConfig `yaml:"client_certs"`
	// Budgets limit the units callers spend per window (budgets.go).
	Budgets *BudgetsConfig `yaml:"budgets"`
	// Roles are named sets of grants (roles.go).
	Roles []RoleConfig `yaml:"roles"`
	// ToolSets are named sets of tools, each its own MCP endpoint (sets.go).
	ToolSets []ToolSetConfig `yaml:"tool_sets"`

	// lines are the line of every entry, when the config came from a
	// file, for the lint reports (roles.go, sets.go).
	lines map[string]int
}

// ClientCertConfig is one accepted client certificate identity: a
// certificate verified against the client CA whose URI SAN or subject
// matches becomes this principal. Exactly one of URISAN and SubjectDN.
type ClientCertConfig struct {
	// URISAN matches a URI subject alternative name of the certificate,
	// e.g. the SPIFFE ID "spiffe://example.org/ns/prod/sa/billing".
	URISAN string `yaml:"uri_san"`
	// SubjectDN matches the certificate's subject distinguished name in
	// RFC 2253 form, as `openssl x509 -noout -subject -nameopt RFC2253`
	// prints it, e.g. "CN=billing,O=Example Corp".
	SubjectDN string `yaml:"subject_dn"`
	// Subject names the caller; required.
	Subject string `yaml:"subject"`
	// Tenant is the caller's tenant; required.
	Tenant string `yaml:"tenant"`
	// Permissions are the grants: "{resource}:{action}", "{resource}:*" or "*".
	Permissions []string `yaml:"permissions"`
	// Roles are roles of the file whose grants are added to Permissions.
	Roles []string `yaml:"roles"`
	// ToolSets, when set, confine the caller to these tool sets.
	ToolSets []string `yaml:"tool_sets"`
	// ReadOnly forbids side-effecting tools.
	ReadOnly bool `yaml:"read_only"`
	// ActForUsers allows the caller to name an end user with x-user-id.
	ActForUsers bool `yaml:"act_for_users"`
	// Identifiers are org_id, team_id, project_id and user_id, each optional.
	Identifiers map[string]string `yaml:"identifiers"`
}

// matchKey is the key a certificate is looked up by: "uri:" or "dn:" and
// the configured value.
func (c *ClientCertConfig) matchKey() string {
	if c.URISAN != "" {
		return "uri:" + c.URISAN
	}
	return "dn:" + c.SubjectDN
}

// APIKeyConfig is one accepted API key.
type APIKeyConfig struct {
	// KeySHA256 is the hex SHA-256 of the key (see [HashKey]); the key itself
	// then never sits in the file.
	KeySHA256 string `yaml:"key_sha256"`
	// Key is the key in plain text, for development only; it produces a warning.
	Key string `yaml:"key"`
	// Subject names the caller; required.
	Subject string `yaml:"subject"`
	// Tenant is the caller's tenant; required.
	Tenant string `yaml:"tenant"`
	// Permissions are the grants: "{resource}:{action}", "{resource}:*" or "*".
	Permissions []string `yaml:"permissions"`
	// Roles are roles of the file whose grants are added to Permissions.
	Roles []string `yaml:"roles"`
	// ToolSets, when set, confine the caller to these tool sets.
	ToolSets []string `yaml:"tool_sets"`
	// ReadOnly forbids side-effecting tools.
	ReadOnly bool `yaml:"read_only"`
	// ActForUsers allows the caller to name an end user with x-user-id.
	ActForUsers bool `yaml:"act_for_users"`
	// Identifiers are org_id, team_id, project_id and user_id, each optional.
	Identifiers map[string]string `yaml:"identifiers"`
}

// JWTConfig accepts JWTs signed by one issuer with keys from a JWKS.
type JWTConfig struct {
	// Issuer must equal the iss claim; required.
	Issuer string `yaml:"issuer"`
	// Audience must be among the aud claim; required.
	Audience string `yaml:"audience"`
	// JWKSFile is a JWKS file read once by New; relative paths are resolved
	// against the auth file's directory. Exactly one of JWKSFile and JWKSURL.
	JWKSFile string `yaml:"jwks_file"`
	// JWKSURL is fetched by New and refreshed in the background; it must be
	// https, or http on a loopback address.
	JWKSURL string `yaml:"jwks_url"`
	// TenantClaim names the claim holding the tenant; default "tenant".
	TenantClaim string `yaml:"tenant_claim"`
	// PermissionsClaim names the claim holding the grants, either a JSON array
	// of strings or a space-separated string such as the standard "scope";
	// default "permissions".
	PermissionsClaim string `yaml:"permissions_claim"`
	// RolesClaim names the claim holding roles of the file (an array of
	// strings or a space-separated string); roles the file does not
	// define are ignored. Default: none, tokens grant no roles.
	RolesClaim string `yaml:"roles_claim"`
	// SubjectClaim names the claim holding the subject; default "sub".
	SubjectClaim string `yaml:"subject_claim"`
	// IdentifiersClaims maps identifier names (org_id, team_id, project_id,
	// user_id) to the string claims holding them; optional.
	IdentifiersClaims map[string]string `yaml:"identifiers_claims"`
	// Algorithms is the allowlist of JWT algorithms; default
	// [DefaultAlgorithms]. HS* and none are never allowed.
	Algorithms []string `yaml:"algorithms"`
	// Leeway tolerates clock skew on exp, nbf and iat; default 0, at most
	// [MaxLeeway].
	Leeway time.Duration `yaml:"leeway"`
}

// ConfigError reports every problem found in an auth file, each naming the
// line (when known) and the entry, e.g. "line 7: api_keys[2]: tenant is required".
type ConfigError struct {
	// Path is the auth file; empty for a Config built in code.
	Path string
	// Problems lists what is wrong, in file order.
	Problems []string
}

// Error joins the problems on one line.
func (e *ConfigError) Error() string {
	prefix := "auth config: "
	if e.Path != "" {
		prefix = "auth file " + e.Path + ": "
	}
	return prefix + strings.Join(e.Problems, "; ")
}

// HashKey returns the hex SHA-256 of an API key, the form stored in key_sha256.
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Validate reports every problem of c as a *[ConfigError], or nil. [New]
// calls it, so a Config built in code gets the same checks as a file.
func (c *Config) Validate() error {
	if c == nil {
		return &ConfigError{Problems: []string{"no configuration"}}
	}
	ps := &problems{}
	c.validate(ps)
	return ps.err("")
}

// Warnings returns what is acceptable but unwise in c, such as plain keys,
// for the caller to log at start-up.
func (c *Config) Warnings() []string {
	var out []string
	for i, k := range c.APIKeys {
		if k.Key != "" {
			out = append(out, fmt.Sprintf("api_keys[%d] (subject %q): plain key in the auth file; use key_sha256 outside development", i, k.Subject))
		}
	}
	return out
}

// LintPermissions returns the API key grants that can never match any tool's
// permission, for the caller to report at start-up. known reports whether
// some tool requires the permission resource:action; for a "{resource}:*"
// grant it is called with action "*" and must report whether any tool
// requires a permission on that resource. The grant "*" is never reported.
// JWT grants are not linted: they arrive with each token.
func (c *Config) LintPermissions(known func(resource, action string) bool) []string {
	if known == nil {
		return nil
	}
	var out []string
	lint := func(entry, subject string, grants []string) {
		for _, g := range grants {
			if g == "*" {
				continue
			}
			resource, action, _ := strings.Cut(g, ":")
			if !known(resource, action) {
				out = append(out, fmt.Sprintf("%s (subject %q): permission %q matches no tool permission", entry, subject, g))
			}
		}
	}
	for i, k := range c.APIKeys {
		lint(fmt.Sprintf("api_keys[%d]", i), k.Subject, k.Permissions)
	}
	for i, k := range c.ClientCerts {
		lint(fmt.Sprintf("client_certs[%d]", i), k.Subject, k.Permissions)
	}
	return out
}

func (c *Config) validate(ps *problems) {
	if len(c.APIKeys) == 0 && c.JWT == nil && len(c.ClientCerts) == 0 {
		ps.add("", "", "no api_keys, no jwt and no client_certs: nothing could ever authenticate")
	}
	sets := c.validateToolSets(ps)
	roles := c.validateRoles(ps, sets)
	seen := make(map[string]int, len(c.APIKeys))
	for i, k := range c.APIKeys {
		path := fmt.Sprintf("api_keys[%d]", i)
		digest := k.validate(ps, path)
		validateRoleRefs(ps, path, k.Roles, roles)
		validateSetRefs(ps, path, k.ToolSets, sets)
		if digest == "" {
			continue
		}
		if j, dup := seen[digest]; dup {
			ps.add(path, "", "same key as api_keys[%d]", j)
			continue
		}
		seen[digest] = i
	}
	if c.JWT != nil {
		c.JWT.validate(ps, "jwt")
	}
	if c.Budgets != nil {
		c.Budgets.validate(ps)
	}
	certs := make(map[string]int, len(c.ClientCerts))
	for i := range c.ClientCerts {
		path := fmt.Sprintf("client_certs[%d]", i)
		validateRoleRefs(ps, path, c.ClientCerts[i].Roles, roles)
		validateSetRefs(ps, path, c.ClientCerts[i].ToolSets, sets)
		if !c.ClientCerts[i].validate(ps, path) {
			continue
		}
		key := c.ClientCerts[i].matchKey()
		if j, dup := certs[key]; dup {
			ps.add(path, "", "matches the same certificates as client_certs[%d]", j)
			continue
		}
		certs[key] = i
	}
}

// validate checks one client certificate entry and reports whether its
// match is well-formed (so that duplicates can be compared).
func (k *ClientCertConfig) validate(ps *problems, path string) bool {
	ok := false
	switch {
	case k.URISAN != "" && k.SubjectDN != "":
		ps.add(path, "uri_san", "and subject_dn are mutually exclusive")
	case k.URISAN != "":
		if u, err := url.Parse(k.URISAN); err != nil || u.Scheme == "" || strings.TrimSpace(k.URISAN) != k.URISAN {
			ps.add(path, "uri_san", "must be an absolute URI such as spiffe://example.org/ns/prod/sa/billing")
		} else {
			ok = true
		}
	case k.SubjectDN != "":
		if !strings.Contains(k.SubjectDN, "=") || strings.TrimSpace(k.SubjectDN) != k.SubjectDN {
			ps.add(path, "subject_dn", "must be a distinguished name in RFC 2253 form such as CN=billing,O=Example")
		} else {
			ok = true
		}
	default:
		ps.add(path, "", "uri_san or subject_dn is required")
	}
	validatePrincipal(ps, path, k.Subject, k.Tenant, k.Permissions, k.Identifiers)
	return ok
}

// validatePrincipal checks what API keys and client certificates share:
// the subject, tenant, grants and identifiers of the principal.
func validatePrincipal(ps *problems, path, subject, tenant string, permissions []string, identifiers map[string]string) {
	if strings.TrimSpace(subject) == "" {
		ps.add(path, "subject", "is required")
	}
	if strings.TrimSpace(tenant) == "" {
		ps.add(path, "tenant", "is required")
	}
	for j, g := range permissions {
		if err := validateGrant(g); err != nil {
			ps.add(path, fmt.Sprintf("permissions[%d]", j), "%v", err)
		}
	}
	validateIdentifiers(ps, path, "identifiers", identifiers)
}

// validate checks one API key entry and returns its normalized digest, or ""
// when there is none to compare.
func (k *APIKeyConfig) validate(ps *problems, path string) string {
	var digest string
	switch {
	case k.KeySHA256 != "" && k.Key != "":
		ps.add(path, "key", "and key_sha256 are mutually exclusive")
	case k.KeySHA256 != "":
		if b, err := hex.DecodeString(k.KeySHA256); err != nil || len(b) != sha256.Size {
			ps.add(path, "key_sha256", "must be 64 hex characters")
		} else {
			digest = hex.EncodeToString(b)
		}
	case k.Key != "":
		switch {
		case len(k.Key) > MaxTokenBytes:
			ps.add(path, "key", "is longer than %d bytes", MaxTokenBytes)
		case !isTokenText(k.Key):
			ps.add(path, "key", "must be printable ASCII without spaces")
		case looksLikeJWT(k.Key):
			ps.add(path, "key", "must not have the shape of a JWT (three dot-separated base64url parts)")
		default:
			digest = HashKey(k.Key)
		}
	default:
		ps.add(path, "", "key_sha256 (or key, in development) is required")
	}
	validatePrincipal(ps, path, k.Subject, k.Tenant, k.Permissions, k.Identifiers)
	return digest
}

func (j *JWTConfig) validate(ps *problems, path string) {
	if strings.TrimSpace(j.Issuer) == "" {
		ps.add(path, "issuer", "is required")
	}
	if strings.TrimSpace(j.Audience) == "" {
		ps.add(path, "audience", "is required")
	}
	switch {
	case j.JWKSFile != "" && j.JWKSURL != "":
		ps.add(path, "jwks_file", "and jwks_url are mutually exclusive")
	case j.JWKSFile == "" && j.JWKSURL == "":
		ps.add(path, "", "jwks_file or jwks_url is required")
	case j.JWKSURL != "":
		if err := validateJWKSURL(j.JWKSURL); err != nil {
			ps.add(path, "jwks_url", "%v", err)
		}
	}
	validateIdentifiers(ps, path, "identifiers_claims", j.IdentifiersClaims)
	for i, alg := range j.Algorithms {
		switch {
		case slices.Contains(supportedAlgorithms, alg):
		case alg == "none" || strings.HasPrefix(strings.ToUpper(alg), "HS"):
			ps.add(path, fmt.Sprintf("algorithms[%d]", i), "%q is never allowed: only asymmetric algorithms are", alg)
		default:
			ps.add(path, fmt.Sprintf("algorithms[%d]", i), "%q is not supported (want one of %s)", alg, strings.Join(supportedAlgorithms, ", "))
		}
	}
	if j.Leeway < 0 || j.Leeway > MaxLeeway {
		ps.add(path, "leeway", "must be between 0s and %v", MaxLeeway)
	}
}

func validateIdentifiers(ps *problems, path, field string, m map[string]string) {
	for _, name := range sortedKeys(m) {
		switch {
		case !slices.Contains(identifierNames, name):
			ps.add(path, field, "has unknown key %q (want %s)", name, strings.Join(identifierNames, ", "))
		case strings.TrimSpace(m[name]) == "":
			ps.add(path, field+"."+name, "must not be empty")
		}
	}
}

// validateGrant accepts "*", "{resource}:*" and "{resource}:{action}".
func validateGrant(g string) error {
	if g == "*" {
		return nil
	}
	resource, action, ok := strings.Cut(g, ":")
	switch {
	case !ok:
		return fmt.Errorf("%q is not a permission (want resource:action, resource:* or *)", g)
	case resource == "*":
		return fmt.Errorf("%q: a wildcard resource is not supported (grant \"*\" or list the resources)", g)
	case !isPermissionPart(resource) || (action != "*" && !isPermissionPart(action)):
		return fmt.Errorf("%q is not a permission (want resource:action, resource:* or *, with letters, digits, '.', '_' and '-')", g)
	}
	return nil
}

func isPermissionPart(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}

func validateJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("is not a valid URL")
	}
	if u.User != nil {
		return errors.New("must not carry credentials")
	}
	if u.Host == "" {
		return errors.New("must have a host")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback.Host(u.Hostname()) {
			return nil
		}
	}
	return errors.New("must be https, or http on a loopback address")
}

// problems collects validation messages, prefixing each with the line of the
// entry it concerns when the config came from a file.
type problems struct {
	lines map[string]int // "api_keys[2].tenant" -> line, from the YAML walk
	list  []string
}

// add records "line N: path: field message". The line is that of path.field
// if the file has it, else that of path.
func (ps *problems) add(path, field, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + " " + msg
	}
	if path != "" {
		msg = path + ": " + msg
	}
	if line := ps.line(path, field); line > 0 {
		msg = fmt.Sprintf("line %d: %s", line, msg)
	}
	ps.list = append(ps.list, msg)
}

func (ps *problems) line(path, field string) int {
	if ps.lines == nil {
		return 0
	}
	if field != "" {
		full := field
		if path != "" {
			full = path + "." + field
		}
		if l, ok := ps.lines[full]; ok {
			return l
		}
	}
	return ps.lines[path]
}

func (ps *problems) err(path string) error {
	if len(ps.list) == 0 {
		return nil
	}
	return &ConfigError{Path: path, Problems: ps.list}
}
