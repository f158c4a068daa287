package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintRedactsUpstreamURLs: `toolsvc lint --upstreams` reports an MCP
// upstream it cannot reach with its URL and the client's error, and both
// show the URL's query value and fragment as REDACTED: the key written in
// the URL is in neither the output nor the log.
func TestLintRedactsUpstreamURLs(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing answers there now
	const key, frag = "lintsecretapikey42", "lintsecretfragment42"
	path := filepath.Join(t.TempDir(), "upstreams.yaml")
	body := "upstreams:\n  - name: deploys\n    timeout: 1s\n    mcp:\n      url: \"http://" + addr + "/mcp?apikey=" + key + "#" + frag + "\"\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"lint", "--knowledge-dir", repoKnowledge(t), "--upstreams", path}, nil, &out, &errOut)
	all := out.String() + errOut.String()
	if code != 1 || !strings.Contains(all, "upstream deploys") || !strings.Contains(all, "apikey=REDACTED") {
		t.Fatalf("lint exit %d, want 1 naming the upstream with its URL redacted:\n%s", code, all)
	}
	for _, secret := range []string{key, frag} {
		if strings.Contains(all, secret) {
			t.Errorf("lint shows %q:\n%s", secret, all)
		}
	}
}
