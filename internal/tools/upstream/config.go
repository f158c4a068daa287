package upstream

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/descriptorpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/base/redact"
)

// File is the upstreams file (`--upstreams FILE`).
type File struct {
	Upstreams []Config `yaml:"upstreams"`
}

// Config is one upstream: a gRPC service (Address) or an MCP server (MCP).
type Config struct {
	// Name identifies the upstream in logs, /healthz and `toolsvc lint`
	// (lower case letters, digits and dashes).
	Name string `yaml:"name"`
	// Address is host:port of a gRPC service.
	Address string `yaml:"address"`
	// MCP makes the upstream an MCP server (Streamable HTTP or stdio)
	// instead of a gRPC service.
	MCP *MCPServer `yaml:"mcp"`
	// TLS is how toolsvc connects: system roots by default.
	TLS TLS `yaml:"tls"`
	// Credential is what toolsvc presents to the upstream: its own, never
	// the caller's.
	Credential Credential `yaml:"credential"`
	// Timeout bounds every call to the upstream and the contract load.
	// Default 10s. The caller's deadline, when shorter, wins.
	Timeout time.Duration `yaml:"timeout"`
	// MaxResultBytes caps the results of this upstream's tools, in bytes
	// (docs/OPERATIONS.md "Result caps"); the smaller of it and
	// --max-result-bytes applies. A gRPC upstream's reply is refused while
	// it is received once over it (never buffered whole); an MCP server's
	// is read up to mcp.max_response_bytes. 0: the global cap only.
	MaxResultBytes int `yaml:"max_result_bytes"`
	// Contracts says where the tool definitions come from.
	Contracts Contracts `yaml:"contracts"`
	// Overlays give the (toolsvc.v1.tool) definition of methods whose
	// protos cannot change, keyed by "package.Service/Method", written
	// like the option's fields. An overlay replaces the method's option.
	// For an MCP server they are keyed by tool name, and each field an
	// overlay sets replaces the one toolsvc derived from the tool.
	Overlays map[string]any `yaml:"overlays"`
	// AllowPermissions lists permissions outside the upstream's own
	// namespace ({name}:…) that an MCP server may declare for its tools in
	// _meta["toolsvc/tool"]. Default none: a tool declaring, say,
	// memory:read (which every reader holds) is refused at load
	// (mcp.permission_namespace).
	AllowPermissions []string `yaml:"allow_permissions"`
	// AllowClaims lists the claims of an MCP server's own tool definitions
	// (annotations and _meta) that take effect: read_only (a query: no
	// side effect, its audit record not awaited, retried), idempotent (a
	// mutation retried), cacheable (results cached). Default none: every
	// tool is treated as a mutation with side effects, never retried or
	// cached, whatever it says of itself.
	AllowClaims []string `yaml:"allow_claims"`
	// Serving holds what the operator decides of an MCP server's tools:
	// naming, verbs, definitions, pins, and the upstream's bulkhead
	// (max_in_flight, circuit), written inline (naming.go).
	Serving `yaml:",inline"`
	// Resources and Prompts grant callers an MCP server's resources and
	// prompts (federate.go); nothing of either is served without its
	// block.
	Resources *Federated `yaml:"resources"`
	Prompts   *Federated `yaml:"prompts"`
	// Identity is how the upstream learns who is calling: a signed
	// assertion on every call (identity.go), and unsigned headers only
	// when turned on.
	Identity IdentityConfig `yaml:"identity"`
	// UserCredential makes the upstream get each caller's own credential
	// instead of toolsvc's (usercreds.go).
	UserCredential UserCredentialConfig `yaml:"user_credential"`
	// TokenExchange exchanges the caller's token for one of the
	// upstream's authorization server (tokenexchange.go).
	TokenExchange *TokenExchangeConfig `yaml:"token_exchange"`

	overlays map[string]*toolsvcv1.Tool
	token    string
}

// TLS configures the connection to an upstream.
type TLS struct {
	// Mode is system (the system roots; default), ca (CAFile), mtls
	// (CAFile, or the system roots, and a client certificate) or
	// plaintext (loopback addresses only, unless AllowNonLoopbackPlaintext).
	Mode       string `yaml:"mode"`
	CAFile     string `yaml:"ca_file"`
	CertFile   string `yaml:"cert_file"`
	KeyFile    string `yaml:"key_file"`
	ServerName string `yaml:"server_name"`
	// AllowNonLoopbackPlaintext lets plaintext reach a non-loopback
	// address: everything, the credential included, travels unencrypted.
	AllowNonLoopbackPlaintext bool `yaml:"allow_non_loopback_plaintext"`
}

// Credential is the bearer token toolsvc sends as `authorization`, read
// from an environment variable or a file (never written in the upstreams
// file itself).
type Credential struct {
	BearerEnv  string `yaml:"bearer_env"`
	BearerFile string `yaml:"bearer_file"`
}

// Contracts is where an upstream's tool definitions come from: its gRPC
// server reflection, or a descriptor set (`buf build -o FILE`).
type Contracts struct {
	Reflection    bool   `yaml:"reflection"`
	DescriptorSet string `yaml:"descriptor_set"`

	fds []*descriptorpb.FileDescriptorProto // given directly (tests)
}

// MCPServer is an upstream MCP server: a Streamable HTTP endpoint (URL,
// with TLS and Credential as for a gRPC service) or a command toolsvc
// starts and speaks to over stdio.
type MCPServer struct {
	// URL is the server's Streamable HTTP endpoint (https; http only to a
	// loopback address unless tls.allow_non_loopback_plaintext).
	URL string `yaml:"url"`
	// Command is the program and its arguments, run with toolsvc's
	// environment and the upstream's credential in TOOLSVC_UPSTREAM_TOKEN
	// (when one is configured); it speaks MCP on its stdin and stdout.
	Command []string `yaml:"command"`
	// Env names variables of toolsvc's environment the command receives;
	// it gets no other but PATH, HOME, TMPDIR, LANG and TZ.
	Env []string `yaml:"env"`
	// MaxResponseBytes bounds one message the server sends (a tools/list
	// page, a tool's result): what the server can make toolsvc buffer. A
	// larger one is refused as PROVIDER_ERROR (malformed_response), never
	// passed on. Default DefaultMaxResponseBytes (8 MiB).
	MaxResponseBytes int64 `yaml:"max_response_bytes"`
	// Protocol is the MCP revision toolsvc speaks to the server: auto (the
	// default) asks server/discover and speaks 2026-07-28 when the server
	// offers it, 2025-11-25 (initialize, a session) otherwise; 2026-07-28
	// or 2025-11-25 forces one, with no fallback.
	Protocol string `yaml:"protocol"`
}

// maxResponse is MaxResponseBytes or its default.
func (m *MCPServer) maxResponse() int64 {
	if m == nil || m.MaxResponseBytes <= 0 {
		return DefaultMaxResponseBytes
	}
	return m.MaxResponseBytes
}

// DefaultTimeout bounds calls to an upstream that sets no timeout.
const DefaultTimeout = 10 * time.Second

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// permissionRE is the form of a permission ((toolsvc.v1.tool).permissions).
var permissionRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*:[a-z][a-z0-9_-]*$`)

// ReadFile reads and checks an upstreams file. Relative paths in it are
// relative to the file's directory. Every problem is reported, each naming
// the upstream and the key.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("upstreams file: %w", err)
	}
	return Parse(b, filepath.Dir(path))
}

// Parse reads an upstreams file's content; dir resolves relative paths.
func Parse(b []byte, dir string) (*File, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("upstreams file: %w", err)
	}
	var errs []error
	seen := map[string]bool{}
	for i := range f.Upstreams {
		u := &f.Upstreams[i]
		where := fmt.Sprintf("upstreams[%d]", i)
		if u.Name != "" {
			where = "upstream " + u.Name
		}
		for _, e := range u.complete(dir) {
			errs = append(errs, fmt.Errorf("upstreams file: %s: %w", where, e))
		}
		if seen[u.Name] {
			errs = append(errs, fmt.Errorf("upstreams file: %s: name is used twice", where))
		}
		seen[u.Name] = true
	}
	errs = append(errs, checkNamespaces(f.Upstreams)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &f, nil
}

func (u *Config) complete(dir string) []error {
	var errs []error
	if !nameRE.MatchString(u.Name) {
		errs = append(errs, fmt.Errorf("name %q: want lower case letters, digits and dashes", u.Name))
	}
	var (
		host string
		err  error
	)
	if u.MCP != nil {
		host, err = u.completeMCP(dir)
		if err != nil {
			errs = append(errs, err)
		}
	} else {
		host, _, err = net.SplitHostPort(u.Address)
		if err != nil || host == "" {
			errs = append(errs, fmt.Errorf("address %q: want host:port", u.Address))
		}
	}
	if u.Timeout == 0 {
		u.Timeout = DefaultTimeout
	}
	for _, c := range u.AllowClaims {
		if c != ClaimReadOnly && c != ClaimIdempotent && c != ClaimCacheable {
			errs = append(errs, fmt.Errorf("allow_claims: %q is not one of read_only, idempotent, cacheable", c))
		}
	}
	for _, p := range u.AllowPermissions {
		if !permissionRE.MatchString(p) {
			errs = append(errs, fmt.Errorf("allow_permissions: %q is not a permission {resource}:{action}", p))
		}
	}
	if u.MaxResultBytes < 0 {
		errs = append(errs, errors.New("max_result_bytes must be positive (or 0: the global cap only)"))
	}
	errs = append(errs, u.Identity.complete()...)
	if u.TokenExchange != nil {
		errs = append(errs, u.TokenExchange.complete()...)
		if u.UserCredential.Required {
			errs = append(errs, errors.New("token_exchange and user_credential.required: give one, the upstream gets one credential"))
		}
		if u.MCP != nil && len(u.MCP.Command) > 0 {
			errs = append(errs, errors.New("token_exchange: a command (stdio) server gets no per-call credential; give it a url"))
		}
	}
	if u.UserCredential.Required && u.MCP != nil && len(u.MCP.Command) > 0 {
		errs = append(errs, errors.New("user_credential.required: a command (stdio) server gets no per-call credential; give it a url"))
	}
	if u.Timeout < 0 {
		errs = append(errs, errors.New("timeout must be positive"))
	}
	rel := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	rel(&u.TLS.CAFile)
	rel(&u.TLS.CertFile)
	rel(&u.TLS.KeyFile)
	rel(&u.Credential.BearerFile)
	rel(&u.Contracts.DescriptorSet)
	if u.TLS.Mode == "" {
		u.TLS.Mode = "system"
	}
	switch u.TLS.Mode {
	case "system":
	case "ca":
		if u.TLS.CAFile == "" {
			errs = append(errs, errors.New("tls.mode ca needs tls.ca_file"))
		}
	case "mtls":
		if u.TLS.CertFile == "" || u.TLS.KeyFile == "" {
			errs = append(errs, errors.New("tls.mode mtls needs tls.cert_file and tls.key_file"))
		}
	case "plaintext":
		if err == nil && host != "" && !loopback.Host(host) && !u.TLS.AllowNonLoopbackPlaintext {
			errs = append(errs, fmt.Errorf("tls.mode plaintext to %s, which is not a loopback address: set tls.allow_non_loopback_plaintext to send calls (and the credential) unencrypted", cmp.Or(u.Address, host)))
		}
	default:
		errs = append(errs, fmt.Errorf("tls.mode %q: want system, ca, mtls or plaintext", u.TLS.Mode))
	}
	switch c := u.Credential; {
	case c.BearerEnv != "" && c.BearerFile != "":
		errs = append(errs, errors.New("credential: give bearer_env or bearer_file, not both"))
	case c.BearerEnv != "":
		u.token = os.Getenv(c.BearerEnv)
		if u.token == "" {
			errs = append(errs, fmt.Errorf("credential.bearer_env: %s is not set", c.BearerEnv))
		}
	case c.BearerFile != "":
		b, rerr := os.ReadFile(c.BearerFile)
		if rerr != nil {
			errs = append(errs, fmt.Errorf("credential.bearer_file: %w", rerr))
		}
		u.token = strings.TrimSpace(string(b))
	}
	if strings.ContainsAny(u.token, "\r\n") {
		errs = append(errs, errors.New("credential: the token must be one line"))
	}
	switch {
	case u.MCP != nil:
		if u.Contracts.Reflection || u.Contracts.DescriptorSet != "" {
			errs = append(errs, errors.New("contracts: an MCP server's contracts are its tools/list; remove contracts"))
		}
	case u.Contracts.Reflection && u.Contracts.DescriptorSet != "":
		errs = append(errs, errors.New("contracts: give reflection or descriptor_set, not both"))
	case !u.Contracts.Reflection && u.Contracts.DescriptorSet == "":
		errs = append(errs, errors.New("contracts: give reflection: true or descriptor_set: FILE"))
	}
	errs = append(errs, u.completeServing()...)
	errs = append(errs, u.completeFederated()...)
	u.overlays = map[string]*toolsvcv1.Tool{}
	u.mcpOverlays = map[string]*mcpOverlay{}
	for method, raw := range u.Overlays {
		if u.MCP == nil && (strings.Count(method, "/") != 1 || strings.HasPrefix(method, "/")) {
			errs = append(errs, fmt.Errorf("overlays: key %q: want package.Service/Method", method))
			continue
		}
		if u.MCP != nil {
			rest, extra, serr := splitMCPOverlay(raw)
			if serr != nil {
				errs = append(errs, fmt.Errorf("overlays[%s]: %w", method, serr))
				continue
			}
			raw = rest
			if extra != nil {
				u.mcpOverlays[method] = extra
			}
		}
		b, jerr := json.Marshal(raw)
		if jerr != nil {
			errs = append(errs, fmt.Errorf("overlays[%s]: %w", method, jerr))
			continue
		}
		spec := &toolsvcv1.Tool{}
		if perr := protojson.Unmarshal(b, spec); perr != nil {
			errs = append(errs, fmt.Errorf("overlays[%s]: not a tool definition: %w", method, perr))
			continue
		}
		u.overlays[method] = spec
	}
	return errs
}

// completeMCP checks an MCP server's entry and returns the host of its
// URL ("" for a command).
func (u *Config) completeMCP(dir string) (string, error) {
	m := u.MCP
	if m.MaxResponseBytes < 0 {
		return "", errors.New("mcp.max_response_bytes must be positive")
	}
	if m.MaxResponseBytes == 0 {
		m.MaxResponseBytes = DefaultMaxResponseBytes
	}
	switch m.Protocol {
	case "":
		m.Protocol = ProtocolAuto
	case ProtocolAuto, Revision2026, Revision2025:
	default:
		return "", fmt.Errorf("mcp.protocol %q: want %s, %s or %s", m.Protocol, ProtocolAuto, Revision2026, Revision2025)
	}
	switch {
	case u.Address != "":
		return "", errors.New("give address (a gRPC service) or mcp (an MCP server), not both")
	case (m.URL == "") == (len(m.Command) == 0):
		return "", errors.New("mcp: give url (Streamable HTTP) or command (stdio), not both")
	case len(m.Command) > 0:
		if !filepath.IsAbs(m.Command[0]) && strings.ContainsRune(m.Command[0], filepath.Separator) {
			m.Command[0] = filepath.Join(dir, m.Command[0])
		}
		if u.TLS.Mode == "" {
			u.TLS.Mode = "plaintext" // a pipe to a child process: nothing to encrypt
		}
		return "", nil
	}
	parsed, err := url.Parse(m.URL)
	if err != nil || parsed.Host == "" || (parsed.Scheme != "http" && parsed.Scheme != "https") {
		return "", fmt.Errorf("mcp.url %q: want an http or https URL", redact.URL(m.URL))
	}
	if parsed.User != nil {
		return "", errors.New("mcp.url: give the credential under credential, not in the URL")
	}
	if parsed.Scheme == "http" {
		if u.TLS.Mode != "" && u.TLS.Mode != "plaintext" {
			return "", fmt.Errorf("mcp.url %q is http: tls.mode %s needs https", redact.URL(m.URL), u.TLS.Mode)
		}
		u.TLS.Mode = "plaintext"
	} else if u.TLS.Mode == "plaintext" {
		return "", fmt.Errorf("mcp.url %q is https: tls.mode plaintext contradicts it", redact.URL(m.URL))
	}
	return parsed.Hostname(), nil
}
