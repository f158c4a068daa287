package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// The routes that publish the keys of the assertions toolsvc sends its
// upstreams (docs/OPERATIONS.md, "Identity of callers to upstreams"):
// anonymous, cacheable, and let through the Host guard like the probes
// (they hold public keys only).
const (
	jwksPath         = "/.well-known/jwks.json"
	openIDConfigPath = "/.well-known/openid-configuration"
)

// openIdentity makes the signer of the caller's assertions, with its keys
// in the store (every replica of the store signs and publishes the same
// keys). Without a public URL (no HTTP listener) no upstream could fetch
// the keys: none is made, and upstreams get no assertion.
func (s *Server) openIdentity() error {
	if s.cfg.PublicURL == "" {
		return nil
	}
	keys, ok := s.store.(store.SigningKeyStore)
	if !ok {
		return fmt.Errorf("the %s store keeps no signing keys", s.store.Backend())
	}
	id, err := upstream.NewIdentity(keys, s.cfg.PublicURL, upstream.WithKeyRotation(s.cfg.IdentityKeyRotation))
	if err != nil {
		return err
	}
	s.identity = id
	rotation := s.cfg.IdentityKeyRotation
	s.jobs.Go("identity key purge", func(ctx context.Context) {
		t := time.NewTicker(max(rotation, time.Minute))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// Keep a few retired keys: they verify nothing new, but an
			// operator can still tell which key signed a logged assertion.
			if _, err := keys.PurgeSigningKeys(ctx, time.Now().Add(-3*rotation-upstream.MaxAssertionTTL)); err != nil && !errors.Is(err, context.Canceled) {
				s.logger.Warn("identity keys not purged", slog.String("error", err.Error()))
			}
		}
	})
	return nil
}

// upstreamOptions are the options of every upstream.Load: approved
// definitions in the store, shared by the fleet, and the caller's identity
// and own credentials when configured.
func (s *Server) upstreamOptions() []upstream.Option {
	opts := []upstream.Option{upstream.WithOnChange(s.upstreamsChanged), upstream.WithStore(s.store, s.approvalsEvery()),
		upstream.WithOnListChanged(s.listChanged), upstream.WithOnResourceUpdated(s.resourceUpdated)}
	if s.identity != nil {
		opts = append(opts, upstream.WithIdentity(s.identity))
	}
	if s.creds != nil {
		opts = append(opts, upstream.WithCredentials(s.creds))
	}
	return opts
}

// identityRoutes mounts the JWKS and the discovery document naming it.
func (s *Server) identityRoutes() {
	if s.identity == nil {
		return
	}
	// A verifier may cache the key set for a quarter of a period: the key
	// that signs next is published a whole period before it signs.
	maxAge := strconv.Itoa(int(min(s.identity.Rotation()/4, time.Hour) / time.Second))
	s.mux.HandleFunc("GET "+jwksPath, func(w http.ResponseWriter, r *http.Request) {
		b, err := s.identity.JWKS(r.Context())
		if err != nil {
			s.logger.Error("JWKS not served: the signing keys could not be read", slog.String("error", err.Error()))
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":"the signing keys are unavailable; retry"}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age="+maxAge)
		_, _ = w.Write(b)
	})
	doc, _ := json.Marshal(map[string]any{
		"issuer":                                s.identity.Issuer(),
		"jwks_uri":                              strings.TrimSuffix(s.identity.Issuer(), "/") + jwksPath,
		"id_token_signing_alg_values_supported": []string{"EdDSA"},
		"subject_types_supported":               []string{"public"},
		"response_types_supported":              []string{},
		"claims_supported": []string{"iss", "aud", "sub", "tenant", "org_id", "team_id", "project_id", "user_id", "session_id",
			"permissions", "tool", "act", "transport", "trace_id", "jti", "iat", "nbf", "exp"},
	})
	s.mux.HandleFunc("GET "+openIDConfigPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(doc)
	})
}

// openCredentials makes the sealer of callers' own upstream credentials
// from --credential-keys (none given: none, and an upstream that needs
// one is refused at load).
func (s *Server) openCredentials() error {
	if len(s.cfg.CredentialKeys) == 0 {
		return nil
	}
	st, ok := s.store.(store.UserCredentialStore)
	if !ok {
		return fmt.Errorf("the %s store keeps no user credentials", s.store.Backend())
	}
	c, err := upstream.NewCredentials(st, s.cfg.CredentialKeys)
	if err != nil {
		return fmt.Errorf("--credential-keys: %w", err)
	}
	s.creds = c
	return nil
}
