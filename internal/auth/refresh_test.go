package auth_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

// jwksServer serves whatever body and status were last set, counting requests.
type jwksServer struct {
	*httptest.Server
	body     atomic.Pointer[[]byte]
	status   atomic.Int32
	requests atomic.Int32
}

func newJWKSServer(tb testing.TB, body []byte) *jwksServer {
	tb.Helper()
	s := &jwksServer{}
	s.set(http.StatusOK, body)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(int(s.status.Load()))
		_, _ = w.Write(*s.body.Load())
	}))
	tb.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(status int, body []byte) {
	s.body.Store(&body)
	s.status.Store(int32(status))
}

func newURLAuthenticator(tb testing.TB, ctx context.Context, url string, opts ...auth.Option) (*auth.Authenticator, error) {
	tb.Helper()
	cfg := &auth.Config{JWT: &auth.JWTConfig{Issuer: testIssuer, Audience: testAudience, JWKSURL: url}}
	opts = append([]auth.Option{auth.WithClock(testClock), auth.WithJWKSRefresh(10 * time.Millisecond)}, opts...)
	a, err := auth.New(ctx, cfg, opts...)
	if err == nil {
		go a.Run(ctx)
	}
	return a, err
}

// eventually polls cond until it holds or 10 s pass.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestJWKSURLRotation(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	k := keys(t)
	srv := newJWKSServer(t, authtest.JWKS(t, k.ed))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := newURLAuthenticator(t, ctx, srv.URL+"/jwks.json")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	authenticate := func(key *authtest.KeyPair) error {
		_, err := a.Authenticate(context.Background(), "Bearer "+key.Sign(t, validClaims()))
		return err
	}
	if err := authenticate(k.ed); err != nil {
		t.Fatalf("initial key: %v", err)
	}
	wantReason(t, authenticate(k.ec), auth.InvalidCredentials, "")

	// The IdP rotates: the new kid appears, the old one goes.
	srv.set(http.StatusOK, authtest.JWKS(t, k.ec))
	eventually(t, "the rotated key", func() bool { return authenticate(k.ec) == nil })
	wantReason(t, authenticate(k.ed), auth.InvalidCredentials, "")

	// After ctx ends the refresh loop stops fetching.
	cancel()
	time.Sleep(50 * time.Millisecond)
	before := srv.requests.Load()
	time.Sleep(100 * time.Millisecond)
	if after := srv.requests.Load(); after != before {
		t.Fatalf("JWKS fetched %d more times after ctx ended", after-before)
	}
	srv.Close()
}

func TestJWKSURLFailedRefreshKeepsKeys(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	k := keys(t)
	weak := authtest.NewRSAKey(t, "weak", 1024)
	srv := newJWKSServer(t, authtest.JWKS(t, k.ed))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testenv.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	a, err := newURLAuthenticator(t, ctx, srv.URL+"/jwks?sig=s3cr3t-query", auth.WithLogger(logger))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	token := k.ed.Sign(t, validClaims())
	failures := []struct {
		name   string
		status int
		body   []byte
	}{
		{name: "server error", status: http.StatusInternalServerError, body: []byte("oops")},
		{name: "not JSON", status: http.StatusOK, body: []byte("<html>")},
		{name: "empty set", status: http.StatusOK, body: []byte(`{"keys":[]}`)},
		{name: "weak key", status: http.StatusOK, body: authtest.JWKS(t, weak)},
	}
	for _, f := range failures {
		srv.set(f.status, f.body)
		start := srv.requests.Load()
		eventually(t, f.name+" refreshes", func() bool { return srv.requests.Load() >= start+3 })
		if _, err := a.Authenticate(context.Background(), "Bearer "+token); err != nil {
			t.Fatalf("%s: last good keys were dropped: %v", f.name, err)
		}
	}
	cancel()
	srv.Close()
	if out := logs.String(); !strings.Contains(out, "JWKS refresh failed") || strings.Contains(out, "s3cr3t-query") {
		t.Fatalf("logs = %s\nwant refresh failures logged without the URL query", out)
	}
}

func TestJWKSURLFirstFetch(t *testing.T) {
	t.Parallel()
	k := keys(t)
	redirect := httptest.NewServer(http.RedirectHandler("https://idp.example.com/jwks", http.StatusFound))
	t.Cleanup(redirect.Close)
	tests := []struct {
		name    string
		status  int
		body    []byte
		url     func(s *jwksServer) string
		wantErr string
	}{
		{name: "not found", status: http.StatusNotFound, body: []byte("no"), wantErr: "HTTP status 404"},
		{name: "oversized body", status: http.StatusOK, body: []byte(`{"keys":[],"x":"` + strings.Repeat("a", 2<<20) + `"}`), wantErr: "larger than"},
		{name: "redirect not followed", status: http.StatusOK, body: authtest.JWKS(t, k.ed),
			url: func(*jwksServer) string { return redirect.URL }, wantErr: "HTTP status 302"},
		{name: "query not logged", status: http.StatusTeapot, body: nil,
			url: func(s *jwksServer) string { return s.URL + "/jwks?token=s3cr3t-query" }, wantErr: "HTTP status 418"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newJWKSServer(t, tt.body)
			srv.set(tt.status, tt.body)
			url := srv.URL
			if tt.url != nil {
				url = tt.url(srv)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err := newURLAuthenticator(t, ctx, url)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cr3t-query") {
				t.Fatalf("error %q leaks the URL query", err)
			}
		})
	}
}

func TestJWKSURLUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := newURLAuthenticator(t, ctx, url); err == nil {
		t.Fatal("New succeeded with an unreachable jwks_url")
	}
}
