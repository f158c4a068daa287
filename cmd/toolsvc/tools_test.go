package main

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"fmt"
	"google.golang.org/protobuf/types/known/structpb"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
)

// TestToolsCallsAMutualTLSServer: `toolsvc tools` with -ca-file,
// -client-cert and -client-key lists the tools of a server that requires
// mutual TLS; without the client certificate it fails; half a client
// certificate is a usage error.
func TestToolsCallsAMutualTLSServer(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serverCA, clientCA := authtest.NewCA(t, "server CA"), authtest.NewCA(t, "client CA")
	srvCert := serverCA.Localhost(t)
	client := clientCA.Issue(t, authtest.CertSpec{Client: true, Subject: pkix.Name{CommonName: "cli"}, URIs: []string{"spiffe://test.invalid/cli"}})
	authFile := write("auth.yaml", []byte("client_certs:\n  - {uri_san: \"spiffe://test.invalid/cli\", subject: cli, tenant: acme, permissions: [\"*\"]}\n"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cfg := &server.Config{GRPCAddr: addr, DisableHTTP: true, DB: filepath.Join(dir, "t.db"), KnowledgeDir: repoKnowledge(t), AuthFile: authFile,
		TLSCert: write("tls.crt", srvCert.CertPEM), TLSKey: write("tls.key", srvCert.KeyPEM), TLSClientCA: write("clients.pem", clientCA.PEM)}
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
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	caFile := write("ca.pem", serverCA.PEM)
	certFile, keyFile := write("cli.crt", client.CertPEM), write("cli.key", client.KeyPEM)

	tools := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"tools", "-addr", addr}, args...), nil, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	var code int
	var out string
	for range 50 { // the listener may take a moment to come up
		if code, out = tools("-ca-file", caFile, "-client-cert", certFile, "-client-key", keyFile, "list"); code == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != 0 || !strings.Contains(out, "search-memories") {
		t.Fatalf("tools list over mutual TLS: exit %d\n%s", code, out)
	}
	if code, out := tools("-ca-file", caFile, "list"); code != 1 {
		t.Errorf("tools list without a client certificate: exit %d, want 1\n%s", code, out)
	}
	if code, out := tools("-ca-file", caFile, "-client-cert", certFile, "list"); code != 2 || !strings.Contains(out, "-client-key") {
		t.Errorf("half a client certificate: exit %d, want 2\n%s", code, out)
	}
	if code, out := tools("-ca-file", authFile, "list"); code != 2 || !strings.Contains(out, fmt.Sprintf("CA file %s: no PEM certificate", authFile)) {
		t.Errorf("a CA file without certificates: exit %d, want 2\n%s", code, out)
	}
}

// TestPrettyIsRegular: the CLI's JSON has one space after each colon and
// two per level, in every build (protojson's multi-line form
// varies its spacing between builds).
func TestPrettyIsRegular(t *testing.T) {
	v, _ := structpb.NewStruct(map[string]any{"a": 1, "b": []any{"x", "y: z"}, "c": map[string]any{"d": true}})
	got := string(pretty(v))
	want := "{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    \"y: z\"\n  ],\n  \"c\": {\n    \"d\": true\n  }\n}"
	if got != want {
		t.Errorf("pretty =\n%s\nwant\n%s", got, want)
	}
}
