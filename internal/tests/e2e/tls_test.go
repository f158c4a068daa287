package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// tlsEnv is a real server listening with TLS on loopback ports.
type tlsEnv struct {
	ca                 *authtest.CA // signed the server's certificate
	dir                string
	certFile, keyFile  string
	grpcAddr, httpAddr string
}

// startTLS runs `toolsvc serve`'s wiring with --tls-cert and --tls-key
// (and --tls-client-ca when clientCA is set) until the test ends.
func startTLS(t *testing.T, authFile string, clientCA *authtest.CA) *tlsEnv {
	t.Helper()
	// The listeners are bound here and handed to the server (RunOn): a
	// port chosen, closed and bound again later could be taken in between
	// by another test's process, and this test would talk to it.
	grpcLis, httpLis := listenLoopback(t), listenLoopback(t)
	e := &tlsEnv{ca: authtest.NewCA(t, "server CA"), dir: t.TempDir(), grpcAddr: grpcLis.Addr().String(), httpAddr: httpLis.Addr().String()}
	e.certFile, e.keyFile = filepath.Join(e.dir, "tls.crt"), filepath.Join(e.dir, "tls.key")
	e.writeCert(t, e.ca.Localhost(t))
	cfg := &server.Config{GRPCAddr: e.grpcAddr, HTTPAddr: e.httpAddr, AuthFile: authFile, DB: filepath.Join(e.dir, "t.db"),
		KnowledgeDir: testserver.KnowledgeDir(t), TLSCert: e.certFile, TLSKey: e.keyFile}
	if clientCA != nil {
		cfg.TLSClientCA = filepath.Join(e.dir, "clients.pem")
		if err := os.WriteFile(cfg.TLSClientCA, clientCA.PEM, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Complete(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), server.Builtin)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.RunOn(ctx, grpcLis, httpLis) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("server did not stop")
		}
	})
	for _, a := range []string{e.grpcAddr, e.httpAddr} {
		for i := 0; ; i++ {
			c, err := net.Dial("tcp", a)
			if err == nil {
				_ = c.Close()
				break
			}
			if i == 100 {
				t.Fatalf("%s never listened: %v", a, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return e
}

// listenLoopback binds a free loopback port for the test's server.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The server closes it when it stops; this closes it if the test
	// ends before the server runs.
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func (e *tlsEnv) writeCert(t *testing.T, c *authtest.Issued) {
	t.Helper()
	if err := os.WriteFile(e.certFile, c.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.keyFile, c.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientTLS trusts only the server's CA and presents cert, if any.
func (e *tlsEnv) clientTLS(cert *authtest.Issued) *tls.Config {
	c := &tls.Config{RootCAs: e.ca.Pool(), MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{cert.TLS}
	}
	return c
}

// transports are a gRPC, a REST and an MCP client of e presenting cert.
func (e *tlsEnv) transports(t *testing.T, cert *authtest.Issued) []Transport {
	t.Helper()
	conn, err := grpc.NewClient(e.grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(e.clientTLS(cert))))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: e.clientTLS(cert), ForceAttemptHTTP2: true}
	t.Cleanup(func() { _ = conn.Close(); tr.CloseIdleConnections() })
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	s := &testserver.Server{Conn: conn, HTTP: "https://" + e.httpAddr}
	return []Transport{GRPC{S: s}, REST{S: s, Client: client}, MCP{S: s, Client: client}}
}

// TestTLSServesEveryTransport: with --tls-cert and --tls-key, a gRPC, a
// REST and an MCP client that know only the CA call tools; grpcurl lists
// the services; the MCP metadata names an https resource; plaintext is
// refused; and a certificate replaced on disk is served without a
// restart, on both listeners.
func TestTLSServesEveryTransport(t *testing.T) {
	creds := testserver.WriteCredentials(t)
	e := startTLS(t, creds.AuthFile, nil)
	ctx := context.Background()
	for _, tr := range e.transports(t, nil) {
		out, err := tr.Call(ctx, creds.Full, "search-memories", map[string]any{"query": "deployment"}, nil)
		if err != nil || out.Code != "OK" {
			t.Errorf("%s over TLS: %v %v %v", tr.Name(), out.Code, out.Error, err)
		}
		out, err = tr.Call(ctx, creds.Bad, "search-memories", map[string]any{"query": "deployment"}, nil)
		if err != nil || out.Code != "UNAUTHORIZED" {
			t.Errorf("%s over TLS with an unknown key: %v %v, want UNAUTHORIZED", tr.Name(), out.Code, err)
		}
	}

	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: e.clientTLS(nil)}}
	defer httpClient.CloseIdleConnections()
	resp, err := httpClient.Get("https://" + e.httpAddr + "/.well-known/oauth-protected-resource")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource string `json:"resource"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	_ = resp.Body.Close()
	if want := "https://" + e.httpAddr + "/mcp"; meta.Resource != want {
		t.Errorf("protected resource metadata names %q, want %q", meta.Resource, want)
	}
	if resp, err := httpClient.Get("https://" + e.httpAddr + "/ui/"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("console over TLS: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}

	plain, err := grpc.NewClient(e.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := toolsvcv1.NewToolServiceClient(plain).ListTools(ctx, &toolsvcv1.ListToolsRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("plaintext gRPC to the TLS listener: %v, want Unavailable", err)
	}
	if resp, err := http.Get("http://" + e.httpAddr + "/healthz"); err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP to the TLS listener answered 200")
		}
	}

	if !testing.Short() {
		caFile := filepath.Join(e.dir, "ca.pem")
		if err := os.WriteFile(caFile, e.ca.PEM, 0o600); err != nil {
			t.Fatal(err)
		}
		root := testenv.RepoRoot(t)
		cmd := exec.Command("go", "tool", "-modfile="+filepath.Join(root, "tools", "go.mod"), "grpcurl", "-max-time", "60", "-cacert", caFile,
			"-H", "authorization: Bearer "+creds.Full, e.grpcAddr, "list")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "toolsvc.v1.ToolService") {
			t.Errorf("grpcurl -cacert list: %v\n%s", err, out)
		}
	}

	renewed := e.ca.Issue(t, authtest.CertSpec{Subject: pkix.Name{CommonName: "renewed"}, DNSNames: []string{"localhost"}})
	e.writeCert(t, renewed)
	later := time.Now().Add(time.Minute) // a distinct modification time even on coarse file systems
	_ = os.Chtimes(e.certFile, later, later)
	_ = os.Chtimes(e.keyFile, later, later)
	for _, a := range []string{e.grpcAddr, e.httpAddr} {
		cfg := e.clientTLS(nil)
		cfg.ServerName = "localhost"
		cfg.NextProtos = []string{"h2"}
		var serial string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			c, err := tls.Dial("tcp", a, cfg)
			if err != nil {
				t.Fatalf("handshake with %s: %v", a, err)
			}
			serial = c.ConnectionState().PeerCertificates[0].SerialNumber.String()
			_ = c.Close()
			if serial == renewed.Leaf.SerialNumber.String() {
				break
			}
		}
		if serial != renewed.Leaf.SerialNumber.String() {
			t.Errorf("%s still serves the old certificate after the files changed", a)
		}
	}
}

// TestMutualTLS: with --tls-client-ca, a client certificate the auth file
// maps authenticates on every transport with its principal's permissions,
// denied exactly where an API key of the same grants is; a certificate
// that maps to nothing is refused like an unknown key; no certificate, an
// expired one and one of another CA do not get past the handshake.
func TestMutualTLS(t *testing.T) {
	creds := testserver.WriteCredentials(t)
	const readerKey = "tsk_reader_0123456789abcdef"
	f, err := os.OpenFile(creds.AuthFile, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := `{org_id: acme-org, team_id: acme-team, project_id: acme-project, user_id: acme-user}`
	_, err = fmt.Fprintf(f, `client_certs:
  - uri_san: spiffe://test.invalid/ns/prod/sa/reader
    subject: reader-service
    tenant: acme
    permissions: ["memory:read", "knowledge:read"]
    identifiers: %[1]s
  - subject_dn: CN=ops,O=Test
    subject: ops
    tenant: acme
    permissions: ["*"]
    identifiers: %[1]s
`, ids)
	_ = f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// An API key with the reader's grants, to compare with.
	b, _ := os.ReadFile(creds.AuthFile)
	b = []byte(strings.Replace(string(b), "api_keys:\n", fmt.Sprintf("api_keys:\n  - key: %q\n    subject: reader-key\n    tenant: acme\n    permissions: [\"memory:read\", \"knowledge:read\"]\n    identifiers: %s\n", readerKey, ids), 1))
	if err := os.WriteFile(creds.AuthFile, b, 0o600); err != nil {
		t.Fatal(err)
	}

	clients := authtest.NewCA(t, "client CA")
	e := startTLS(t, creds.AuthFile, clients)
	client := func(spec authtest.CertSpec) *authtest.Issued { spec.Client = true; return clients.Issue(t, spec) }
	reader := client(authtest.CertSpec{Subject: pkix.Name{CommonName: "reader"}, URIs: []string{"spiffe://test.invalid/ns/prod/sa/reader"}})
	ops := client(authtest.CertSpec{Subject: pkix.Name{CommonName: "ops", Organization: []string{"Test"}}})
	unmapped := client(authtest.CertSpec{Subject: pkix.Name{CommonName: "stranger"}, URIs: []string{"spiffe://test.invalid/ns/prod/sa/stranger"}})
	ctx := context.Background()

	calls := []struct {
		tool string
		args map[string]any
	}{
		{"search-memories", map[string]any{"query": "deployment"}},
		{"query-knowledge", map[string]any{"query": "deployment"}},
		{"add-memory", map[string]any{"content": "written by a certificate"}},
		{"sync-knowledge", map[string]any{}},
	}
	want := map[string]string{"search-memories": "OK", "query-knowledge": "OK", "add-memory": "NOT_FOUND", "sync-knowledge": "NOT_FOUND"} // a tool outside the grants is invisible
	byCert, byKey := e.transports(t, reader), e.transports(t, unmapped)
	for i := range byCert {
		for _, c := range calls {
			cert, err := byCert[i].Call(ctx, "", c.tool, c.args, nil)
			if err != nil {
				t.Fatalf("%s %s by certificate: %v", byCert[i].Name(), c.tool, err)
			}
			// The bearer key decides over the (unmapped) certificate.
			key, err := byKey[i].Call(ctx, readerKey, c.tool, c.args, nil)
			if err != nil {
				t.Fatalf("%s %s by key: %v", byKey[i].Name(), c.tool, err)
			}
			if cert.Code != want[c.tool] || key.Code != cert.Code {
				t.Errorf("%s %s: certificate %s, key %s; want both %s", byCert[i].Name(), c.tool, cert.Code, key.Code, want[c.tool])
			}
		}
	}
	for _, tr := range e.transports(t, ops) {
		if out, err := tr.Call(ctx, "", "add-memory", map[string]any{"content": "written by ops"}, nil); err != nil || out.Code != "OK" {
			t.Errorf("%s add-memory by the subject-DN certificate: %v %v %v", tr.Name(), out.Code, out.Error, err)
		}
	}
	for _, tr := range byKey {
		if out, err := tr.Call(ctx, "", "search-memories", map[string]any{"query": "x"}, nil); err != nil || out.Code != "UNAUTHORIZED" {
			t.Errorf("%s by an unmapped certificate: %v %v, want UNAUTHORIZED", tr.Name(), out.Code, err)
		}
	}

	refused := map[string]*authtest.Issued{
		"no certificate": nil,
		"expired certificate": client(authtest.CertSpec{Subject: pkix.Name{CommonName: "reader"}, URIs: []string{"spiffe://test.invalid/ns/prod/sa/reader"},
			NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}),
		"certificate of another CA": authtest.NewCA(t, "other CA").Issue(t, authtest.CertSpec{Client: true, Subject: pkix.Name{CommonName: "ops", Organization: []string{"Test"}},
			URIs: []string{"spiffe://test.invalid/ns/prod/sa/reader"}}),
	}
	for name, cert := range refused {
		t.Run(name, func(t *testing.T) {
			conn, err := grpc.NewClient(e.grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(e.clientTLS(cert))))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := toolsvcv1.NewToolServiceClient(conn).ListTools(ctx, &toolsvcv1.ListToolsRequest{}); status.Code(err) != codes.Unavailable {
				t.Errorf("gRPC: %v, want the handshake refused (Unavailable)", err)
			}
			tr := &http.Transport{TLSClientConfig: e.clientTLS(cert)}
			defer tr.CloseIdleConnections()
			for _, path := range []string{"/v1/tools", "/mcp", "/healthz"} {
				resp, err := (&http.Client{Transport: tr}).Get("https://" + e.httpAddr + path)
				if err == nil {
					_ = resp.Body.Close()
					t.Errorf("GET %s answered %d, want the handshake refused", path, resp.StatusCode)
				}
			}
		})
	}
}
