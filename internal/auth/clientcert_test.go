package auth_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

// verified is the TLS state of a connection whose client certificate the
// handshake verified.
func verified(leaf *x509.Certificate) *tls.ConnectionState {
	return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: [][]*x509.Certificate{{leaf}}}
}

func TestClientCertificatesMapToPrincipals(t *testing.T) {
	t.Parallel()
	path := writeAuthFile(t, `
client_certs:
  - uri_san: spiffe://example.org/ns/prod/sa/billing
    subject: billing
    tenant: acme
    permissions: ["memory:read"]
    read_only: true
    identifiers: {org_id: acme-org}
  - subject_dn: CN=reporting,O=Example Corp
    subject: reporting
    tenant: globex
    permissions: ["*"]
    act_for_users: true
api_keys:
  - key: "`+plainKey+`"
    subject: dev
    tenant: local
`)
	cfg, err := auth.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ca := authtest.NewCA(t, "clients")
	billing := ca.Issue(t, authtest.CertSpec{Client: true, Subject: pkix.Name{CommonName: "whatever"},
		URIs: []string{"https://example.org/other", "spiffe://example.org/ns/prod/sa/billing"}})
	reporting := ca.Issue(t, authtest.CertSpec{Client: true, Subject: pkix.Name{CommonName: "reporting", Organization: []string{"Example Corp"}}})
	unknown := ca.Issue(t, authtest.CertSpec{Client: true, Subject: pkix.Name{CommonName: "reporting", Organization: []string{"Other"}},
		URIs: []string{"spiffe://example.org/ns/prod/sa/billing-2"}})
	ctx := context.Background()

	p, err := a.AuthenticatePeer(ctx, "", verified(billing.Leaf))
	if err != nil {
		t.Fatalf("billing certificate: %v", err)
	}
	if p.Subject != "billing" || p.Tenant != "acme" || !p.ReadOnly || p.ActForUsers || p.Method != auth.MethodClientCert ||
		p.Identifiers["org_id"] != "acme-org" || !p.Allows("memory:read") || p.Allows("memory:write") || !p.ExpiresAt.Equal(billing.Leaf.NotAfter) {
		t.Fatalf("billing principal = %+v", p)
	}
	p.Permissions[0] = "*" // the caller's copy: must not change the template
	if again, _ := a.AuthenticatePeer(ctx, "", verified(billing.Leaf)); again.Allows("memory:write") {
		t.Fatal("a returned principal aliases the authenticator's template")
	}
	if p, err := a.AuthenticatePeer(ctx, "", verified(reporting.Leaf)); err != nil || p.Subject != "reporting" || p.Tenant != "globex" || !p.ActForUsers {
		t.Fatalf("reporting certificate (by subject DN): %+v, %v", p, err)
	}

	refused := []struct {
		name   string
		header string
		state  *tls.ConnectionState
		reason auth.Reason
	}{
		{name: "unmapped certificate", state: verified(unknown.Leaf), reason: auth.InvalidCredentials},
		{name: "no certificate, no header", reason: auth.MissingCredentials},
		{name: "TLS without a client certificate", state: &tls.ConnectionState{}, reason: auth.MissingCredentials},
		// A server without a client CA does not verify what it receives.
		{name: "unverified certificate", state: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{billing.Leaf}}, reason: auth.MissingCredentials},
		// A bearer credential decides, whatever the certificate.
		{name: "bad key beside a mapped certificate", header: "Bearer tsk_nobody_0123456789", state: verified(billing.Leaf), reason: auth.InvalidCredentials},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.AuthenticatePeer(ctx, tc.header, tc.state)
			if !errors.Is(err, &auth.Error{Reason: tc.reason}) {
				t.Fatalf("err = %v, want reason %v", err, tc.reason)
			}
		})
	}
	if p, err := a.AuthenticatePeer(ctx, "Bearer "+plainKey, verified(billing.Leaf)); err != nil || p.Subject != "dev" {
		t.Fatalf("key beside a certificate: %+v, %v; want the key's principal", p, err)
	}
	if p, err := auth.NewDevelopment().AuthenticatePeer(ctx, "", verified(unknown.Leaf)); err != nil || !p.Anonymous {
		t.Fatalf("development mode: %+v, %v", p, err)
	}
}

func TestClientCertConfigErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, content string
		want          []string
	}{
		{name: "client certificates alone are a configuration", content: "client_certs:\n  - {uri_san: \"spiffe://a/b\", subject: s, tenant: t}\n"},
		{name: "both matches", content: "client_certs:\n  - {uri_san: \"spiffe://a/b\", subject_dn: \"CN=x\", subject: s, tenant: t}\n",
			want: []string{"line 2: client_certs[0]: uri_san and subject_dn are mutually exclusive"}},
		{name: "no match", content: "client_certs:\n  - {subject: s, tenant: t}\n", want: []string{"client_certs[0]: uri_san or subject_dn is required"}},
		{name: "relative URI", content: "client_certs:\n  - {uri_san: \"billing\", subject: s, tenant: t}\n", want: []string{"uri_san must be an absolute URI"}},
		{name: "not a DN", content: "client_certs:\n  - {subject_dn: \"billing\", subject: s, tenant: t}\n", want: []string{"subject_dn must be a distinguished name"}},
		{name: "principal fields", content: "client_certs:\n  - subject_dn: \"CN=x\"\n    permissions: [\"*:read\"]\n    identifiers: {team: x}\n",
			want: []string{"client_certs[0]: subject is required", "client_certs[0]: tenant is required", "permissions[0]", "unknown key \"team\""}},
		{name: "duplicate", content: "client_certs:\n  - {subject_dn: \"CN=x\", subject: a, tenant: t}\n  - {subject_dn: \"CN=x\", subject: b, tenant: t}\n",
			want: []string{"line 3: client_certs[1]: matches the same certificates as client_certs[0]"}},
		{name: "unknown key", content: "client_certs:\n  - {uri: \"spiffe://a/b\", subject: s, tenant: t}\n", want: []string{`unknown key "uri"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := auth.LoadFile(writeAuthFile(t, tc.content))
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ce *auth.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("no problem contains %q; problems:\n%s", w, strings.Join(ce.Problems, "\n"))
				}
			}
		})
	}
}
