package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/base/redact"
)

// jwksFetcher fetches a JWKS over HTTP(S), bounded in time and size.
type jwksFetcher struct {
	url    string
	client *http.Client
}

func (f *jwksFetcher) fetch(ctx context.Context) (*keySet, error) {
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks_url: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			ue.URL = f.redacted()
		}
		return nil, fmt.Errorf("jwks_url: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks_url %s: HTTP status %d", f.redacted(), resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwks_url %s: %w", f.redacted(), err)
	}
	ks, err := parseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("jwks_url %s: %w", f.redacted(), err)
	}
	return ks, nil
}

// redacted is the URL as logs and errors show it (package redact): its
// user info, query values and fragment may carry secrets.
func (f *jwksFetcher) redacted() string { return redact.URL(f.url) }

// refreshLoop replaces the key set every interval until ctx ends. A failed
// refresh keeps the last good keys: an IdP outage must not lock every
// caller out while their tokens are still valid.
func (v *jwtVerifier) refreshLoop(ctx context.Context, f *jwksFetcher, interval time.Duration) {
	periodic.Run(ctx, interval, func(ctx context.Context) {
		ks, err := f.fetch(ctx)
		if err != nil {
			if ctx.Err() == nil {
				v.logger.WarnContext(ctx, "auth: JWKS refresh failed; keeping the previous keys",
					"url", f.redacted(), "error", err)
			}
			return
		}
		v.keys.Store(ks)
		v.logger.DebugContext(ctx, "auth: JWKS refreshed", "url", f.redacted(), "keys", len(ks.keys))
	})
}
