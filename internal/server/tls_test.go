package server

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

// TestTLSFilesReload: a certificate replaced on disk is served from the
// next handshake on; a replacement that does not load leaves the last good
// one in service.
func TestTLSFilesReload(t *testing.T) {
	ca := authtest.NewCA(t, "test CA")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(c *authtest.Issued, when time.Time) {
		t.Helper()
		for _, f := range []struct {
			path string
			data []byte
		}{{certFile, c.CertPEM}, {keyFile, c.KeyPEM}} {
			if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(f.path, when, when); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := ca.Localhost(t)
	start := time.Now()
	write(first, start)
	files, err := newTLSFiles(certFile, keyFile, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	clock := start
	files.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func() { mu.Lock(); clock = clock.Add(2 * tlsCheckInterval); mu.Unlock() }

	lis, err := tls.Listen("tcp", "127.0.0.1:0", files.serverConfig("http/1.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() { _ = c.(*tls.Conn).Handshake(); _ = c.Close() }()
		}
	}()
	served := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", lis.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if got := served(); got != first.Leaf.SerialNumber.String() {
		t.Fatalf("serial %s, want the first certificate's", got)
	}

	second := ca.Issue(t, authtest.CertSpec{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"}})
	write(second, start.Add(time.Minute))
	if got := served(); got != first.Leaf.SerialNumber.String() {
		t.Fatal("files were looked at again within the check interval")
	}
	advance()
	if got := served(); got != second.Leaf.SerialNumber.String() {
		t.Fatalf("serial %s after the files changed, want the second certificate's", got)
	}

	// A key that does not match its certificate (a half-finished
	// replacement) does not load: the second certificate stays.
	third := ca.Localhost(t)
	if err := os.WriteFile(certFile, third.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(certFile, start.Add(2*time.Minute), start.Add(2*time.Minute))
	advance()
	if got := served(); got != second.Leaf.SerialNumber.String() {
		t.Fatalf("serial %s after a broken replacement, want the last good certificate", got)
	}
	write(third, start.Add(3*time.Minute))
	advance()
	if got := served(); got != third.Leaf.SerialNumber.String() {
		t.Fatalf("serial %s once the replacement is complete, want the third certificate's", got)
	}
}

// TestTLSConfigChecks: the TLS settings that cannot work are refused at
// Complete, and TLS makes the default public URL https.
func TestTLSConfigChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{name: "cert without key", cfg: Config{TLSCert: "c.pem"}, want: "--tls-cert and --tls-key go together"},
		{name: "client CA without TLS", cfg: Config{TLSClientCA: "ca.pem", AuthFile: "a.yaml"}, want: "--tls-client-ca needs --tls-cert"},
		{name: "client CA without auth file", cfg: Config{TLSCert: "c.pem", TLSKey: "k.pem", TLSClientCA: "ca.pem"}, want: "--tls-client-ca needs --auth-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Complete()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Complete() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	c := Config{TLSCert: "c.pem", TLSKey: "k.pem", HTTPAddr: "127.0.0.1:8443"}
	if err := c.Complete(); err != nil || c.PublicURL != "https://127.0.0.1:8443" {
		t.Fatalf("Complete() = %v, public URL %q; want https://127.0.0.1:8443", err, c.PublicURL)
	}
}

// TestCleartextWarning: a listener beyond loopback without TLS is warned
// about at start; loopback, or TLS, is not.
func TestCleartextWarning(t *testing.T) {
	var logs strings.Builder
	s := &Server{logger: slog.New(slog.NewTextHandler(&logs, nil))}
	s.warnCleartext("HTTP", "127.0.0.1:8080")
	s.warnCleartext("gRPC", "[::1]:9090")
	if logs.Len() != 0 {
		t.Fatalf("warned about loopback: %s", logs.String())
	}
	s.warnCleartext("HTTP", ":8080")
	if !strings.Contains(logs.String(), "without TLS") || !strings.Contains(logs.String(), "addr=:8080") {
		t.Fatalf("no warning for :8080 without TLS: %q", logs.String())
	}
	logs.Reset()
	s.tls = &tlsFiles{}
	s.warnCleartext("HTTP", "0.0.0.0:8443")
	if logs.Len() != 0 {
		t.Fatalf("warned although TLS is on: %s", logs.String())
	}
}
