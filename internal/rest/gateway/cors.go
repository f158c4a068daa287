package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
)

// ErrWildcardCredentials is returned by CORS.Validate when credentials are
// allowed together with the wildcard origin "*": any web site could then
// make calls with the user's cookies or HTTP credentials.
var ErrWildcardCredentials = errors.New(`CORS: credentials cannot be allowed with the wildcard origin "*"`)

// DefaultCORSMaxAge is how long browsers may cache a preflight answer.
const DefaultCORSMaxAge = 10 * time.Minute

// CORS lets browser pages on other origins call the REST API.
type CORS struct {
	// AllowedOrigins are exact origins, scheme://host[:port], or "*" for
	// any origin. Empty (the default) sends no CORS headers at all.
	AllowedOrigins []string
	// AllowCredentials sends Access-Control-Allow-Credentials: true. It is
	// refused with "*" (see ErrWildcardCredentials). Default false.
	AllowCredentials bool
	// MaxAge is the preflight cache lifetime; default DefaultCORSMaxAge.
	MaxAge time.Duration
}

// Validate reports every problem of c: malformed origins, and credentials
// with the wildcard origin (errors.Is(err, ErrWildcardCredentials)).
func (c CORS) Validate() error {
	var errs []error
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			if c.AllowCredentials {
				errs = append(errs, ErrWildcardCredentials)
			}
			continue
		}
		if _, err := normalizeOrigin(o); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// normalizeOrigin checks that o is scheme://host[:port] and lower-cases it.
func normalizeOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("CORS: origin %q: want scheme://host[:port], e.g. https://console.example.com", o)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// corsPolicy is a validated CORS.
type corsPolicy struct {
	origins     map[string]bool
	any         bool
	credentials bool
	maxAge      string
	methods     string
	headers     string
}

// corsMethods are the methods of the REST API.
var corsMethods = []string{http.MethodGet, http.MethodPost, http.MethodDelete}

func newCORSPolicy(c CORS) (*corsPolicy, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(c.AllowedOrigins) == 0 {
		return nil, nil
	}
	p := &corsPolicy{origins: map[string]bool{}, credentials: c.AllowCredentials}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			p.any = true
			continue
		}
		n, _ := normalizeOrigin(o)
		p.origins[n] = true
	}
	maxAge := c.MaxAge
	if maxAge <= 0 {
		maxAge = DefaultCORSMaxAge
	}
	p.maxAge = strconv.Itoa(int(maxAge.Seconds()))
	p.methods = strings.Join(corsMethods, ", ")
	p.headers = strings.Join(append([]string{"content-type"}, wire.ForwardedHeaders...), ", ")
	return p, nil
}

func (p *corsPolicy) allows(origin string) bool {
	return p.any || p.origins[strings.ToLower(origin)]
}

// handle adds the CORS headers of an allowed origin and answers preflight
// requests; it reports whether the request was answered.
func (p *corsPolicy) handle(w http.ResponseWriter, r *http.Request, writeError func(http.ResponseWriter, *http.Request, error)) bool {
	if p == nil {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
	if origin == "" {
		return false
	}
	if !p.allows(origin) {
		if preflight {
			writeError(w, r, forbidden("origin %q is not allowed to call this API", origin))
			return true
		}
		// Non-browser callers may send any Origin; without CORS headers a
		// browser will not let the page read the response.
		return false
	}
	if m := r.Header.Get("Access-Control-Request-Method"); preflight && !slices.Contains(corsMethods, m) {
		writeError(w, r, forbidden("method %q is not allowed; allowed: %s", m, p.methods))
		return true
	}
	if p.any && !p.credentials {
		h.Set("Access-Control-Allow-Origin", "*")
	} else {
		h.Set("Access-Control-Allow-Origin", origin)
	}
	if p.credentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	if !preflight {
		h.Set("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate")
		return false
	}
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", p.methods)
	h.Set("Access-Control-Allow-Headers", p.headers)
	h.Set("Access-Control-Max-Age", p.maxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}

func forbidden(format string, args ...any) *apiError {
	return &apiError{status: http.StatusForbidden, te: &toolsvcv1.ToolError{
		Code: string(toolerr.Forbidden), Message: fmt.Sprintf(format, args...),
	}}
}
