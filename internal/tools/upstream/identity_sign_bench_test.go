package upstream_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	jwtv5 "github.com/golang-jwt/jwt/v5"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

// libraryClaims signs upstream.Claims through golang-jwt: the same JSON,
// the interface's getters unused for signing.
type libraryClaims struct{ c *upstream.Claims }

func (l libraryClaims) MarshalJSON() ([]byte, error)                 { return json.Marshal(l.c) }
func (libraryClaims) GetExpirationTime() (*jwtv5.NumericDate, error) { return nil, nil }
func (libraryClaims) GetIssuedAt() (*jwtv5.NumericDate, error)       { return nil, nil }
func (libraryClaims) GetNotBefore() (*jwtv5.NumericDate, error)      { return nil, nil }
func (libraryClaims) GetIssuer() (string, error)                     { return "", nil }
func (libraryClaims) GetSubject() (string, error)                    { return "", nil }
func (libraryClaims) GetAudience() (jwtv5.ClaimStrings, error)       { return nil, nil }

// BenchmarkIdentitySignLibrary signs the claims BenchmarkIdentitySign signs
// with golang-jwt v5 (EdDSA, the same header fields), without the key
// lookup Identity.Sign also does: the measured reason the assertion is
// signed by the 15 lines of Identity.Sign (docs/BENCHMARKS.md, "Upstream
// identity").
func BenchmarkIdentitySignLibrary(b *testing.B) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	f := &callctx.Facts{Tenant: "acme", Subject: "key:ci", Transport: "grpc", TraceID: "0af7651916cd43dd8448eb211c80319c",
		Identifiers: map[string]string{callctx.KeyTeamID: "platform", callctx.KeyProjectID: "p1", callctx.KeyAgentID: "claude-code"}}
	ctx := callctx.WithAdmission(b.Context(), &callctx.Admission{Tool: "create-ticket", Version: "1.0.0", Permissions: []string{"tickets:write"}})
	b.ReportAllocs()
	for b.Loop() {
		c := upstream.ClaimsFor(ctx, f, "tickets", time.Now(), upstream.DefaultAssertionTTL)
		c.Issuer = "https://toolsvc.example"
		var id [16]byte
		_, _ = rand.Read(id[:])
		c.ID = base64.RawURLEncoding.EncodeToString(id[:])
		tok := jwtv5.NewWithClaims(jwtv5.SigningMethodEdDSA, libraryClaims{c})
		tok.Header["typ"] = "toolsvc-identity+jwt"
		tok.Header["kid"] = "k-20261207-86400"
		if _, err := tok.SignedString(priv); err != nil {
			b.Fatal(err)
		}
	}
}
