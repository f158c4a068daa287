package reliability

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestHAProxyHealthCheck runs a real HAProxy (Debian's, installed by
// scripts/haproxy.sh) in front of a production-like replica (an auth file,
// listening on loopback) with HAProxy's own health checks, which speak
// HTTP/1.0 and send no Host: the bare `option httpchk` (OPTIONS /), and
// `option httpchk GET /readyz` and `GET /healthz`, the checks operators
// write. Each backend's server must be UP by a completed layer-7 check
// (HAProxy's stats socket), and a request must be proxied through. A
// check of the operator view must find the server DOWN: it keeps the
// DNS-rebinding guard and needs a credential, and it shows the test can
// tell.
func TestHAProxyHealthCheck(t *testing.T) {
	haproxy := testenv.LookPath(t, "haproxy")
	c := testserver.WriteCredentials(t)
	p := newProcConfig(t, "--db", filepath.Join(t.TempDir(), "ha.db"), "--auth-file", c.AuthFile).start(t)
	replica := strings.TrimPrefix(p.HTTP, "http://")

	// Unix sockets keep HAProxy off TCP ports the test would have to pick.
	dir, err := os.MkdirTemp("", "hap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	checks := map[string]string{
		"bare":     "option httpchk",
		"readyz":   "option httpchk GET /readyz",
		"healthz":  "option httpchk GET /healthz",
		"operator": "option httpchk GET /healthz?view=operator",
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global\n  stats socket %s mode 600 level admin\n\n", filepath.Join(dir, "admin.sock"))
	cfg.WriteString("defaults\n  mode http\n  timeout connect 2s\n  timeout client 10s\n  timeout server 10s\n\n")
	for name, check := range checks {
		fmt.Fprintf(&cfg, "listen %s\n  bind unix@%s\n  %s\n  server replica %s check inter 200ms\n\n",
			name, filepath.Join(dir, name+".sock"), check, replica)
	}
	cfgFile := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgFile, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cmd := exec.Command(haproxy, "-db", "-f", cfgFile)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	})

	want := map[string]string{"bare": "UP", "readyz": "UP", "healthz": "UP", "operator": "DOWN"}
	deadline := time.Now().Add(30 * time.Second)
	var got map[string]serverState
	for {
		select {
		case <-done:
			t.Fatalf("haproxy exited:\n%s", logs.String())
		default:
		}
		got = haproxyServers(filepath.Join(dir, "admin.sock"))
		settled := len(got) == len(want)
		for name, w := range want {
			st := got[name]
			// A server is UP at start-up until a check fails: only a
			// completed check (L7OK, or L7STS for a refusal) settles it.
			if st.status != w || (w == "UP" && st.check != "L7OK") || (w == "DOWN" && st.check != "L7STS") {
				settled = false
			}
		}
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("HAProxy's servers = %+v, want %v\nhaproxy:\n%s\ntoolsvc:\n%s", got, want, logs.String(), p.Logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The balancer serves through the replica it checks.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", filepath.Join(dir, "bare.sock"))
		},
	}}
	req, _ := http.NewRequest(http.MethodGet, "http://localhost/v1/tools", nil)
	req.Header.Set("Authorization", "Bearer "+c.Full)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "search-memories") {
		t.Fatalf("GET /v1/tools through HAProxy = %d %.300s", resp.StatusCode, b)
	}
}

// serverState is a server of HAProxy's `show stat`.
type serverState struct{ status, check string }

// haproxyServers reads `show stat` from the stats socket: the state and
// last check of each backend's server, by proxy name (none on error).
func haproxyServers(sock string) map[string]serverState {
	conn, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return nil
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil
	}
	r := csv.NewReader(bufio.NewReader(conn))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) == 0 {
		return nil
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimPrefix(h, "# ")] = i
	}
	out := map[string]serverState{}
	for _, row := range rows[1:] {
		if len(row) <= max(col["status"], col["check_status"]) || row[col["svname"]] != "replica" {
			continue
		}
		out[row[col["pxname"]]] = serverState{status: row[col["status"]], check: row[col["check_status"]]}
	}
	return out
}
