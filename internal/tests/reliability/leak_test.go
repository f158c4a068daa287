package reliability

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/rest/console"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/tests/support/authtest"
	"github.com/toolsvc/toolsvc/internal/tests/support/oidcprovider"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestNothingLeaks starts the built binary, on each store, with a secret
// in every place toolsvc can be given one, reads every answer an anonymous
// caller can get (and the refusals a caller with a credential can get) and
// the whole log at debug level: no secret may appear anywhere, and no
// upstream address in an anonymous answer. docs/RELIABILITY.md lists the
// places.
func TestNothingLeaks(t *testing.T) {
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) { leakRun(t, backend) })
	}
}

// leakSecrets are the secrets of one run, by where they were put.
type leakSecrets map[string]string

func leakRun(t *testing.T, backend string) {
	redisURL := os.Getenv("TOOLSVC_TEST_REDIS")
	if redisURL == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	dir := t.TempDir()
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	secrets := leakSecrets{}
	secret := func(place string) string {
		v := "lk" + hex.EncodeToString(nonce[:]) + strings.ReplaceAll(place, "-", "")
		secrets[place] = v
		return v
	}

	// Auth file: a hashed key, a plain key, JWT with a jwks_url whose
	// query and fragment hold secrets.
	operatorKey, plainKey := secret("api-key-hashed"), secret("api-key-plain")
	secrets["api-key-digest"] = auth.HashKey(operatorKey)
	jwtKey := authtest.NewECKey(t, "leak-kid", elliptic.P256())
	jwks := authtest.JWKS(t, jwtKey)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(jwks) }))
	t.Cleanup(idp.Close)
	jwksURL := idp.URL + "/jwks.json?access_token=" + secret("jwks-query") + "#" + secret("jwks-fragment")
	authFile := filepath.Join(dir, "auth.yaml")
	writeFile(t, authFile, fmt.Sprintf(`api_keys:
  - key_sha256: %q
    subject: operator
    tenant: acme
    permissions: ["*"]
  - key: %q
    subject: reader
    tenant: acme
    permissions: ["memory:read"]
jwt:
  issuer: https://idp.test.invalid/
  audience: toolsvc
  jwks_url: %q
  tenant_claim: tenant
  permissions_claim: permissions
`, secrets["api-key-digest"], plainKey, jwksURL))
	now := time.Now()
	claims := authtest.StandardClaims("https://idp.test.invalid/", "toolsvc", "jwt-user", "acme", now, time.Hour)
	claims["permissions"] = []string{"memory:read"}
	secrets["jwt"] = jwtKey.Sign(t, claims)

	// Upstreams: a gRPC service whose token comes from the environment and
	// an MCP server whose URL holds a key and whose token is in a file;
	// neither answers (their addresses are free loopback ports).
	// Every port of this test is reserved at once, so no two are the same
	// (one port handed out twice once made an upstream's address toolsvc's
	// own, which every 401 then named).
	ports := freePorts(t, 8)
	grpcUp, mcpUp := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	// And an MCP server that answers (the example), behind a proxy that
	// keeps every identity assertion toolsvc sends it: each is a secret.
	deploysFront, assertions := recordingDeploys(t, ports[2])
	writeFile(t, filepath.Join(dir, "token"), secret("upstream-token-file")+"\n")
	// A real OpenID provider that exchanges (RFC 8693) the JWT caller's
	// token for one of the deploys server as upstream deploys-x: its
	// client secret and every token it issues are secrets.
	idpSecret := secret("idp-client-secret")
	oidc := oidcprovider.Start(t, oidcprovider.Options{
		Clients: []oidcprovider.Client{{ID: "toolsvc", Secret: idpSecret, Exchange: true, ExchangeAudiences: []string{"deploys-api"}}},
		Trust:   map[string]crypto.PublicKey{"https://idp.test.invalid/": jwtKey.Public},
	})
	exchangingClaims := authtest.StandardClaims("https://idp.test.invalid/", "toolsvc", "jwt-operator", "acme", now, time.Hour)
	exchangingClaims["permissions"] = []string{"*"}
	secrets["jwt-exchanging"] = jwtKey.Sign(t, exchangingClaims)
	mcpURL := "http://" + mcpUp + "/mcp?apikey=" + secret("upstream-url-query") + "#" + secret("upstream-url-fragment")
	upstreamsFile := filepath.Join(dir, "upstreams.yaml")
	writeFile(t, upstreamsFile, fmt.Sprintf(`upstreams:
  - name: tickets
    address: %q
    tls: {mode: plaintext}
    credential: {bearer_env: LEAK_UPSTREAM_TOKEN}
    timeout: 1s
    contracts: {reflection: true}
  - name: silent
    mcp: {url: %q}
    credential: {bearer_file: token}
    timeout: 1s
  - name: deploys
    mcp: {url: %q}
    timeout: 5s
    allow_claims: [read_only]
    user_credential: {required: true}
  - name: deploys-x
    mcp: {url: %q}
    timeout: 5s
    naming: {namespace: x}
    allow_permissions: ["deploys:read", "deploys:write"]
    token_exchange: {token_endpoint: %q, client_id: toolsvc, client_secret_env: LEAK_IDP_SECRET, audience: deploys-api}
`, grpcUp, mcpURL, deploysFront.URL+"/mcp", deploysFront.URL+"/mcp", oidc.TokenEndpoint()))
	envToken := secret("upstream-token-env")
	// The key that seals callers' own credentials, and one such credential.
	credentialKey := base64.StdEncoding.EncodeToString([]byte((secret("credential-key") + "0123456789abcdef0123456789")[:32]))
	secrets["credential-key-base64"] = credentialKey
	userCredential := secret("user-credential")

	// TLS: the key's path and its content.
	tlsDir := filepath.Join(dir, secret("tls-key-dir"))
	certFile, keyFile, pool, keyPEM := writeTLS(t, tlsDir)
	secrets["tls-key-pem"] = keyPEM

	// Stores, Redis, embeddings and OTLP endpoints with credentials.
	db := filepath.Join(dir, "leak.db")
	if backend == testserver.Postgres {
		u, err := url.Parse(testserver.PostgresDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(u.User.Username(), secret("postgres-password")) // trust auth: any password
		db = u.String()
	}
	ru, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	ru.User = url.UserPassword("default", secret("redis-password")) // no requirepass: any password
	embeddingsURL := fmt.Sprintf("http://127.0.0.1:%d/v1?api_key=%s", ports[3], secret("embeddings-query"))
	otlpURL := fmt.Sprintf("http://otel:%s@127.0.0.1:%d/v1/traces?token=%s", secret("otlp-password"), ports[4], secret("otlp-query"))

	grpcAddr := fmt.Sprintf("127.0.0.1:%d", ports[5])
	httpAddr := fmt.Sprintf("127.0.0.1:%d", ports[6])
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", ports[7])
	cmd := exec.Command(toolsvcBinary(t), "serve", "--grpc-addr", grpcAddr, "--http-addr", httpAddr, "--metrics-addr", metricsAddr,
		"--log-level", "debug", "--knowledge-dir", filepath.Join(testenv.RepoRoot(t), "examples", "knowledge"),
		"--auth-file", authFile, "--upstreams", upstreamsFile, "--db", db, "--redis", ru.String(),
		"--credential-keys", "leak:"+credentialKey,
		"--embeddings-url", embeddingsURL, "--otlp-endpoint", otlpURL, "--tls-cert", certFile, "--tls-key", keyFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLSVC_CONFIG=", "LEAK_UPSTREAM_TOKEN="+envToken, "LEAK_IDP_SECRET="+idpSecret)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, GRPCAddr: grpcAddr, HTTP: "https://" + httpAddr, Logs: logs, done: make(chan struct{})}
	go func() { p.exitErr = cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	waitReady(t, p, client)

	answers := &leakAnswers{}
	read := func(name, method, path string, body string, header ...string) *http.Response {
		req, err := http.NewRequest(method, p.HTTP+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		answers.add(fmt.Sprintf("%s (%s %s → %d)", name, method, path, resp.StatusCode), resp.Header, b)
		return resp
	}
	bearer := func(token string) []string { return []string{"Authorization", "Bearer " + token} }
	jsonBody := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}

	// What anyone can read.
	read("probe", "GET", "/healthz", "")
	read("readiness", "GET", "/readyz", "")
	read("seed 003 health", "GET", "/api/mcp/health", "")
	read("balancer check", "OPTIONS", "/", "")
	read("metrics without a credential", "GET", "/metrics", "")
	read("OpenAPI", "GET", "/openapi.json", "")
	read("console", "GET", console.Path, "")
	entries, err := os.ReadDir(filepath.Join(testenv.RepoRoot(t), "internal", "rest", "console", "static"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		read("console asset", "GET", console.Path+"/"+e.Name(), "")
	}
	read("JWKS", "GET", "/.well-known/jwks.json", "")
	read("OpenID configuration", "GET", "/.well-known/openid-configuration", "")
	read("OAuth metadata", "GET", "/.well-known/oauth-protected-resource", "")
	read("OAuth metadata of /mcp", "GET", "/.well-known/oauth-protected-resource/mcp", "")
	read("MCP stream", "GET", "/mcp", "", "Accept", "text/event-stream")
	read("operator view, anonymous", "GET", "/healthz?view=operator", "")
	// Every 401 and 403 of HTTP: no credential, a wrong one, an expired
	// JWT, a credential without the permission.
	expired := jwtKey.Sign(t, authtest.StandardClaims("https://idp.test.invalid/", "toolsvc", "jwt-user", "acme", now.Add(-2*time.Hour), time.Hour))
	for _, cred := range []struct{ name, token string }{
		{"no credential", ""}, {"an unknown key", "tsk_unknown_" + hex.EncodeToString(nonce[:])}, {"an expired JWT", expired},
		{"a key without the permission", plainKey}, {"a JWT without the permission", secrets["jwt"]},
	} {
		h := append([]string{}, jsonBody...)
		if cred.token != "" {
			h = append(h, bearer(cred.token)...)
		}
		read("operator view with "+cred.name, "GET", "/healthz?view=operator", "", h...)
		read("metrics with "+cred.name, "GET", "/metrics", "", h...)
		read("REST list with "+cred.name, "GET", "/v1/tools", "", h...)
		read("REST call with "+cred.name, "POST", "/v1/tools/add-memory:call", `{"content":"x"}`, h...)
		read("seed 003 list with "+cred.name, "GET", "/api/mcp/tools", "", h...)
		read("seed 003 call with "+cred.name, "POST", "/api/mcp/tool/call", `{"toolName":"add-memory","input":{"content":"x"}}`, h...)
		resp := read("MCP initialize with "+cred.name, "POST", "/mcp",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"leak","version":"1"}}}`, h...)
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			hs := append(append([]string{}, h...), "Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25")
			read("MCP initialized with "+cred.name, "POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hs...)
			read("MCP tools/call with "+cred.name, "POST", "/mcp",
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add-memory","arguments":{"content":"x"}}}`, hs...)
		}
	}
	// gRPC: every refusal's status, message and details.
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	tools := toolsvcv1.NewToolServiceClient(conn)
	args, _ := structpb.NewStruct(map[string]any{"content": "x"})
	for _, token := range []string{"", "tsk_unknown_" + hex.EncodeToString(nonce[:]), expired, plainKey, secrets["jwt"]} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if token != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
		}
		var trailer metadata.MD
		_, lerr := tools.ListTools(ctx, &toolsvcv1.ListToolsRequest{}, grpc.Trailer(&trailer))
		_, cerr := tools.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: "add-memory", Arguments: args}, grpc.Trailer(&trailer))
		cancel()
		for _, err := range []error{lerr, cerr} {
			if err == nil {
				continue
			}
			st, _ := status.FromError(err)
			b, _ := protojson.Marshal(st.Proto())
			answers.add("gRPC "+st.Code().String(), http.Header(trailer), b)
		}
	}

	// The metrics listener is the operator's (bound privately): it may
	// name upstreams, but never a secret.
	resp, err := client.Get("https://" + metricsAddr + "/metrics") // the listeners' TLS
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(mb, []byte("toolsvc_registry_tools")) {
		t.Fatalf("--metrics-addr /metrics = %d %.200s", resp.StatusCode, mb)
	}

	// The operator view shows the upstreams, with their URLs redacted.
	opResp := read("operator view", "GET", "/healthz?view=operator", "", bearer(operatorKey)...)
	if opResp.StatusCode != http.StatusOK {
		t.Fatalf("operator view with the operator's key = %d", opResp.StatusCode)
	}
	operator := answers.last()
	if !strings.Contains(operator, grpcUp) || !strings.Contains(operator, "http://"+mcpUp+"/mcp?apikey=REDACTED#REDACTED") {
		t.Errorf("operator view does not show the upstreams with their URLs redacted: %.2000s", operator)
	}

	// A call forwarded to the MCP server that answers: it gets a signed
	// assertion and the caller's own credential, stored first (and the
	// refusal before it), none of which any answer, log or metric may show.
	opJSON := append(append([]string{}, jsonBody...), bearer(operatorKey)...)
	read("upstream call without a stored credential", "POST", "/v1/tools/create-deployment:call", `{"service":"billing","version":"1.4.2","environment":"staging"}`, opJSON...)
	if resp := read("store a credential", "POST", "/v1/tools/set-upstream-credential:call",
		`{"upstream":"deploys","token":"`+userCredential+`"}`, opJSON...); resp.StatusCode != http.StatusOK {
		t.Errorf("set-upstream-credential = %d: %s", resp.StatusCode, answers.last())
	}
	if resp := read("upstream call", "POST", "/v1/tools/create-deployment:call", `{"service":"billing","version":"1.4.2","environment":"staging"}`,
		append(append([]string{}, jsonBody...), bearer(operatorKey)...)...); resp.StatusCode != http.StatusOK {
		t.Errorf("the forwarded call = %d: %s", resp.StatusCode, answers.last())
	}
	// A call whose token is exchanged at the provider (twice: the second
	// uses the cached token), then one the provider refuses (an API-key
	// caller's subject token is toolsvc's assertion, which it does not
	// trust).
	for range 2 {
		if resp := read("exchanged upstream call", "POST", "/v1/tools/create-x-deployment:call", `{"service":"billing","version":"1.4.2","environment":"staging"}`,
			append(append([]string{}, jsonBody...), bearer(secrets["jwt-exchanging"])...)...); resp.StatusCode != http.StatusOK {
			t.Errorf("the call with an exchanged token = %d: %s", resp.StatusCode, answers.last())
		}
	}
	read("refused exchange", "POST", "/v1/tools/create-x-deployment:call", `{"service":"billing","version":"1.4.2","environment":"staging"}`, opJSON...)
	// What shows state, read again now that a token was exchanged.
	read("probe after the exchange", "GET", "/healthz", "")
	read("operator view after the exchange", "GET", "/healthz?view=operator", "", bearer(operatorKey)...)
	operator += answers.last() // may name upstreams' addresses, never a secret
	read("metrics after the exchange", "GET", "/metrics", "", bearer(operatorKey)...)
	if resp, err := client.Get("https://" + metricsAddr + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		mb = append(mb, b...)
	}
	exchanged := oidc.Exchanged()
	if len(exchanged) != 1 {
		t.Errorf("the provider issued %d tokens by exchange, want 1 (then cached)", len(exchanged))
	}
	for i, x := range exchanged {
		secrets[fmt.Sprintf("exchanged-token-%d", i)] = x
		secrets[fmt.Sprintf("exchanged-token-%d-signature", i)] = x[strings.LastIndex(x, ".")+1:]
	}
	for i, a := range assertions() {
		secrets[fmt.Sprintf("assertion-%d", i)] = a
		secrets[fmt.Sprintf("assertion-%d-signature", i)] = a[strings.LastIndex(a, ".")+1:]
	}
	if len(assertions()) == 0 {
		t.Error("the MCP server received no x-toolsvc-identity")
	}

	// Stop, so that the log is whole.
	if err := p.terminate(t, 30*time.Second); err != nil {
		t.Errorf("toolsvc did not stop cleanly: %v", err)
	}
	log := logs.String()
	if !strings.Contains(log, "REDACTED") {
		t.Errorf("the log shows no redacted URL: the MCP upstream's error should quote its URL redacted\n%s", log)
	}

	// The private signing keys, as the store keeps them and as a JWK's
	// "d" would show them.
	for i, seed := range signingSeeds(t, db) {
		secrets[fmt.Sprintf("signing-key-%d", i)] = base64.RawURLEncoding.EncodeToString(seed)
		secrets[fmt.Sprintf("signing-key-%d-hex", i)] = hex.EncodeToString(seed)
	}

	// The audit records, token exchanges among them.
	auditText := auditRecords(t, db)
	if !strings.Contains(auditText, "token-exchange") {
		t.Error("no token exchange was audited")
	}

	anonymous := answers.all(func(name string) bool {
		return !strings.HasPrefix(name, "operator view (") && !strings.HasPrefix(name, "operator view after")
	})
	for place, s := range secrets {
		for _, a := range anonymous {
			if strings.Contains(a.text, s) {
				t.Errorf("the secret of %s is in %s:\n%.1000s", place, a.name, a.text)
			}
		}
		if strings.Contains(operator, s) {
			t.Errorf("the secret of %s is in the operator view", place)
		}
		if strings.Contains(auditText, s) {
			t.Errorf("the secret of %s is in the audit records", place)
		}
		if bytes.Contains(mb, []byte(s)) {
			t.Errorf("the secret of %s is in --metrics-addr's /metrics", place)
		}
		if strings.Contains(log, s) {
			i := strings.Index(log, s)
			t.Errorf("the secret of %s is in the log: …%s…", place, log[max(0, i-300):min(len(log), i+100)])
		}
	}
	for _, addr := range []string{grpcUp, mcpUp, tlsDir, keyFile, db, idp.URL} {
		for _, a := range anonymous {
			if strings.Contains(a.text, addr) {
				t.Errorf("%s is in %s:\n%.1000s", addr, a.name, a.text)
			}
		}
	}
	t.Logf("%d answers read, %d secrets checked, %d bytes of log", len(anonymous), len(secrets), len(log))
}

// leakAnswers are the answers read, headers and body.
type leakAnswers struct {
	mu   sync.Mutex
	list []leakAnswer
}

type leakAnswer struct{ name, text string }

func (a *leakAnswers) add(name string, h http.Header, body []byte) {
	var b strings.Builder
	_ = h.Write(&b)
	b.Write(body)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, leakAnswer{name: name, text: b.String()})
}

func (a *leakAnswers) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.list[len(a.list)-1].text
}

func (a *leakAnswers) all(keep func(name string) bool) []leakAnswer {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []leakAnswer
	for _, x := range a.list {
		if keep(x.name) {
			out = append(out, x)
		}
	}
	return out
}

// waitReady waits until the process's /readyz answers 200 over HTTPS.
func waitReady(t *testing.T, p *process, client *http.Client) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-p.done:
			t.Fatalf("toolsvc exited during start-up: %v\n%s", p.exitErr, p.Logs.String())
		default:
		}
		if resp, err := client.Get(p.HTTP + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolsvc not ready after 90s:\n%s", p.Logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// writeTLS writes a self-signed certificate for 127.0.0.1 and its key in
// dir; it returns their paths, a pool trusting the certificate and the
// base64 body of the key (its secret part as a PEM file shows it).
func writeTLS(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool, keyBody string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "toolsvc leak test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}))
	writeFile(t, keyFile, keyPEM)
	lines := strings.Split(keyPEM, "\n")
	return certFile, keyFile, pool, lines[1] // the key's first line of base64
}

// recordingDeploys runs the example MCP server behind a proxy that keeps
// the x-toolsvc-identity of every request; it returns the proxy and the
// assertions kept so far.
func recordingDeploys(t *testing.T, port int) (*httptest.Server, func() []string) {
	t.Helper()
	bin := testenv.Binary(t, filepath.Join(testenv.RepoRoot(t), "examples", "upstreams", "deploys"), "./cmd/deploys")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "-addr", addr, "-token-env", "LEAK_NO_DEPLOYS_TOKEN")
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		if i == 100 {
			t.Fatalf("the example MCP server never listened: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var (
		mu   sync.Mutex
		kept []string
	)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("X-Toolsvc-Identity"); a != "" {
			mu.Lock()
			kept = append(kept, a)
			mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), kept...)
	}
}

// signingSeeds are the private keys toolsvc signs assertions with, read
// from its store.
// auditRecords are the audit records of tenant acme, as text.
func auditRecords(t *testing.T, db string) string {
	t.Helper()
	st, err := backends.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var b strings.Builder
	cursor := ""
	for {
		events, next, err := st.ListAudit(t.Context(), store.AuditFilter{Tenant: "acme", Limit: store.MaxAuditLimit, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			fmt.Fprintf(&b, "%+v\n", e)
		}
		if next == "" {
			return b.String()
		}
		cursor = next
	}
}

func signingSeeds(t *testing.T, db string) [][]byte {
	t.Helper()
	st, err := backends.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	keys, err := st.(store.SigningKeyStore).SigningKeys(t.Context(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Error("the store holds no signing key: no assertion was signed")
	}
	var out [][]byte
	for _, k := range keys {
		out = append(out, k.Private)
	}
	return out
}
