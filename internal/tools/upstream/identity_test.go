package upstream_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// memKeys is a SigningKeyStore in memory, with the backends' first-wins
// insert.
type memKeys struct {
	mu   sync.Mutex
	keys []store.SigningKey
	adds int
}

func (m *memKeys) AddSigningKey(_ context.Context, k *store.SigningKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.adds++
	for _, x := range m.keys {
		if x.ID == k.ID {
			return nil
		}
	}
	m.keys = append(m.keys, *k)
	return nil
}

func (m *memKeys) SigningKeys(_ context.Context, since time.Time) ([]store.SigningKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.SigningKey
	for _, k := range m.keys {
		if k.NotAfter.After(since) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (m *memKeys) PurgeSigningKeys(context.Context, time.Time) (int64, error) { return 0, nil }

func verify(t *testing.T, id *upstream.Identity, token string, at time.Time) (map[string]any, error) {
	t.Helper()
	var set jose.JSONWebKeySet
	b, err := id.JWKS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return nil, err
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) == 0 {
		return nil, jose.ErrJWKSKidNotFound
	}
	var std jwt.Claims
	var all map[string]any
	if err := tok.Claims(keys[0].Key, &std, &all); err != nil {
		return nil, err
	}
	return all, std.ValidateWithLeeway(jwt.Expected{Issuer: "https://toolsvc.test", AnyAudience: jwt.Audience{"tickets"}, Time: at}, 0)
}

// TestIdentitySignsWhatTheChainDecided: the assertion verifies with
// go-jose against the published key set and carries the call's facts and
// admission, and no permission beyond the tool's.
func TestIdentitySignsWhatTheChainDecided(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	id, err := upstream.NewIdentity(&memKeys{}, "https://toolsvc.test", upstream.WithIdentityClock(func() time.Time { return now }))
	if err != nil {
		t.Fatal(err)
	}
	f := &callctx.Facts{Tenant: "acme", Subject: "alice", Transport: "mcp", TraceID: "0af7651916cd43dd8448eb211c80319c",
		Identifiers: map[string]string{callctx.KeyTeamID: "t1", callctx.KeyAgentID: "claude"}}
	ctx := callctx.WithAdmission(t.Context(), &callctx.Admission{Tool: "create-ticket", Version: "1.0.0", Permissions: []string{"tickets:write"}})
	token, err := id.Sign(ctx, upstream.ClaimsFor(ctx, f, "tickets", now, upstream.DefaultAssertionTTL))
	if err != nil {
		t.Fatal(err)
	}
	claims, err := verify(t, id, token, now.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"sub": "alice", "tenant": "acme", "team_id": "t1", "tool": "create-ticket@1.0.0", "transport": "mcp",
		"trace_id": f.TraceID, "aud": "tickets", "iss": "https://toolsvc.test"}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("%s = %v, want %v", k, claims[k], v)
		}
	}
	if p, _ := claims["permissions"].([]any); len(p) != 1 || p[0] != "tickets:write" {
		t.Errorf("permissions = %v", claims["permissions"])
	}
	if act, _ := claims["act"].(map[string]any); act["sub"] != "claude" {
		t.Errorf("act = %v", claims["act"])
	}
	if _, err := verify(t, id, token, now.Add(61*time.Second)); err == nil {
		t.Error("an assertion verified after its 60 s")
	}
	again, _ := id.Sign(ctx, upstream.ClaimsFor(ctx, f, "tickets", now, upstream.DefaultAssertionTTL))
	if again == token {
		t.Error("two calls got the same assertion (jti)")
	}
}

// TestIdentityRotation: the next period's key is published before it
// signs; a retired key stays published while what it signed may live;
// two signers on one store (replicas) agree.
func TestIdentityRotation(t *testing.T) {
	keys := &memKeys{}
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0).UTC().Truncate(time.Hour)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a, _ := upstream.NewIdentity(keys, "https://toolsvc.test", upstream.WithKeyRotation(time.Hour), upstream.WithIdentityClock(clock))
	b, _ := upstream.NewIdentity(keys, "https://toolsvc.test", upstream.WithKeyRotation(time.Hour), upstream.WithIdentityClock(clock))
	kids := func(id *upstream.Identity) []string {
		var set jose.JSONWebKeySet
		raw, err := id.JWKS(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(raw, &set)
		var out []string
		for _, k := range set.Keys {
			out = append(out, k.KeyID)
		}
		return out
	}
	sign := func(id *upstream.Identity) string {
		tok, err := id.Sign(t.Context(), &upstream.Claims{Audience: "tickets", Subject: "s", IssuedAt: clock().Unix(), Expiry: clock().Add(time.Minute).Unix()})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	firstAt := clock()
	first := sign(a)
	if got := kids(a); len(got) != 2 {
		t.Fatalf("published %v, want the current and the next key", got)
	}
	if _, err := verify(t, b, first, clock()); err != nil {
		t.Fatalf("another replica does not verify: %v", err)
	}
	mu.Lock()
	now = now.Add(time.Hour + time.Second) // the next period
	mu.Unlock()
	second := sign(b)
	if _, err := verify(t, a, first, firstAt); err != nil {
		t.Errorf("the retired key is no longer published: %v", err)
	}
	if _, err := verify(t, a, second, clock()); err != nil {
		t.Errorf("the new key is not published by the other replica: %v", err)
	}
	if len(kids(b)) != 3 {
		t.Errorf("published %v, want retired, current and next", kids(b))
	}
	mu.Lock()
	now = now.Add(10 * time.Minute)
	mu.Unlock()
	_ = sign(b)
	time.Sleep(50 * time.Millisecond)
	if got := kids(b); len(got) != 3 && len(got) != 2 {
		t.Errorf("published %v", got)
	}
}

// BenchmarkIdentitySign is the signing cost of one forwarded call: the
// claims of the call and one Ed25519 signature (docs/BENCHMARKS.md,
// "Upstream identity").
func BenchmarkIdentitySign(b *testing.B) {
	id, err := upstream.NewIdentity(&memKeys{}, "https://toolsvc.example")
	if err != nil {
		b.Fatal(err)
	}
	f := &callctx.Facts{Tenant: "acme", Subject: "key:ci", Transport: "grpc", TraceID: "0af7651916cd43dd8448eb211c80319c",
		Identifiers: map[string]string{callctx.KeyTeamID: "platform", callctx.KeyProjectID: "p1", callctx.KeyAgentID: "claude-code"}}
	ctx := callctx.WithAdmission(b.Context(), &callctx.Admission{Tool: "create-ticket", Version: "1.0.0", Permissions: []string{"tickets:write"}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := id.Sign(ctx, upstream.ClaimsFor(ctx, f, "tickets", time.Now(), upstream.DefaultAssertionTTL)); err != nil {
			b.Fatal(err)
		}
	}
}
