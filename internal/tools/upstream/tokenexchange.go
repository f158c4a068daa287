package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// TokenExchangeConfig makes toolsvc exchange (RFC 8693) the caller's
// token for one the upstream accepts, at the upstream's authorization
// server, and forward that as `authorization: Bearer …` in place of
// toolsvc's own credential (docs/OPERATIONS.md, "Token exchange").
type TokenExchangeConfig struct {
	// TokenEndpoint is the authorization server's token endpoint (https;
	// http only to a loopback address).
	TokenEndpoint string `yaml:"token_endpoint"`
	// ClientID and the secret in ClientSecretEnv are toolsvc's client
	// credentials there (HTTP Basic).
	ClientID        string `yaml:"client_id"`
	ClientSecretEnv string `yaml:"client_secret_env"`
	// Audience and Resource name the upstream to the server (RFC 8693,
	// RFC 8707); Scopes are asked for.
	Audience string   `yaml:"audience"`
	Resource string   `yaml:"resource"`
	Scopes   []string `yaml:"scopes"`

	secret string
}

func (c *TokenExchangeConfig) complete() []error {
	var errs []error
	u, err := url.Parse(c.TokenEndpoint)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		errs = append(errs, fmt.Errorf("token_exchange.token_endpoint %q: want an https URL", c.TokenEndpoint))
	case u.Scheme == "http" && !loopback.Host(u.Hostname()):
		errs = append(errs, fmt.Errorf("token_exchange.token_endpoint %q: http only to a loopback address", c.TokenEndpoint))
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("token_exchange.client_id is required"))
	}
	if c.ClientSecretEnv != "" {
		c.secret = os.Getenv(c.ClientSecretEnv)
		if c.secret == "" {
			errs = append(errs, fmt.Errorf("token_exchange.client_secret_env: %s is not set", c.ClientSecretEnv))
		}
	}
	return errs
}

// Token types of RFC 8693, section 3.
const (
	tokenTypeJWT    = "urn:ietf:params:oauth:token-type:jwt"
	tokenTypeAccess = "urn:ietf:params:oauth:token-type:access_token"
)

// exchanger exchanges and caches tokens for one upstream. A token is kept
// per (subject, tenant, scopes) until 30 s before it expires; concurrent
// exchanges of one key are one request.
type exchanger struct {
	cfg      *TokenExchangeConfig
	upstream string
	client   *http.Client
	now      func() time.Time
	group    singleflight.Group
	mu       sync.Mutex
	cache    map[string]exchanged
	// audit, when set, records each exchange made (not a cached token):
	// the caller, the outcome and how long it took (exchangeaudit.go).
	audit func(ctx context.Context, tenant, subject string, ttl time.Duration, err error, took time.Duration)
}

type exchanged struct {
	token   string
	expires time.Time
}

// exchangeSkew is how long before its expiry a cached token is no longer
// used: it must not expire on its way to the upstream.
const exchangeSkew = 30 * time.Second

func newExchanger(cfg *TokenExchangeConfig, upstream string) *exchanger {
	return &exchanger{cfg: cfg, upstream: upstream, client: &http.Client{Timeout: 10 * time.Second}, now: time.Now, cache: map[string]exchanged{}}
}

// token returns a token for the caller, exchanging subjectToken (the
// caller's JWT, else toolsvc's assertion: subjectType says which) unless
// one is cached.
func (x *exchanger) token(ctx context.Context, tenant, subject, subjectToken, subjectType string) (string, error) {
	key := tenant + "\x1f" + subject + "\x1f" + strings.Join(x.cfg.Scopes, " ")
	x.mu.Lock()
	if c, ok := x.cache[key]; ok && x.now().Before(c.expires.Add(-exchangeSkew)) {
		x.mu.Unlock()
		return c.token, nil
	}
	x.mu.Unlock()
	v, err, _ := x.group.Do(key, func() (any, error) {
		start := time.Now()
		tok, ttl, err := x.exchange(context.WithoutCancel(ctx), subjectToken, subjectType)
		if x.audit != nil {
			x.audit(ctx, tenant, subject, ttl, err, time.Since(start))
		}
		if err != nil {
			return "", err
		}
		x.mu.Lock()
		x.cache[key] = exchanged{token: tok, expires: x.now().Add(ttl)}
		x.mu.Unlock()
		return tok, nil
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// exchange makes one request to the token endpoint. Its errors never
// quote a token: a refusal says the server's error code only.
func (x *exchanger) exchange(ctx context.Context, subjectToken, subjectType string) (string, time.Duration, error) {
	form := url.Values{
		"grant_type":           {"urn:ietf:params:oauth:grant-type:token-exchange"},
		"subject_token":        {subjectToken},
		"subject_token_type":   {subjectType},
		"requested_token_type": {tokenTypeAccess},
	}
	if x.cfg.Audience != "" {
		form.Set("audience", x.cfg.Audience)
	}
	if x.cfg.Resource != "" {
		form.Set("resource", x.cfg.Resource)
	}
	if len(x.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(x.cfg.Scopes, " "))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.cfg.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, x.unavailable(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(x.cfg.ClientID), url.QueryEscape(x.cfg.secret))
	resp, err := x.client.Do(req)
	if err != nil {
		return "", 0, x.unavailable(errors.New("the token endpoint did not answer"))
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
	}
	_ = json.Unmarshal(body, &out)
	details := map[string]any{"upstream": x.upstream}
	switch {
	case resp.StatusCode == http.StatusOK && out.AccessToken != "" && !strings.ContainsAny(out.AccessToken, "\r\n"):
		ttl := time.Duration(out.ExpiresIn) * time.Second
		if ttl <= 0 {
			ttl = time.Minute // none given: a minute, then exchange again
		}
		return out.AccessToken, ttl, nil
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		code := out.Error
		if !oauthErrorRE(code) {
			code = "unknown"
		}
		details["reason"], details["oauth_error"] = "token_exchange_refused", code
		return "", 0, toolerr.New(toolerr.Unauthorized,
			"the authorization server of upstream %s refused to exchange your token (%s): you may not act there, or your token is not for it; get a token it accepts or ask the operator",
			x.upstream, code).WithDetails(details)
	default:
		return "", 0, x.unavailable(fmt.Errorf("the token endpoint answered %d", resp.StatusCode))
	}
}

func (x *exchanger) unavailable(err error) error {
	return toolerr.Wrap(err, toolerr.ProviderError, "the authorization server of upstream %s is unavailable; retry", x.upstream).
		WithDetails(map[string]any{"upstream": x.upstream, "reason": "token_exchange_unavailable"}).NoEffect()
}

// oauthErrorRE accepts an OAuth error code (RFC 6749, section 5.2: a
// short token of printable ASCII), so that a server's free text never
// reaches a caller.
func oauthErrorRE(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}
