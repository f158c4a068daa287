package reliability

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// proxy is a loopback TCP proxy whose link can be cut and restored, to
// make a dependency unreachable without stopping the shared server.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// newProxy forwards a loopback port to target until cleanup.
func newProxy(tb testing.TB, target string) *proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(func() {
		_ = ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's host:port.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
		}
		go pipe(up, c)
		go pipe(c, up)
	}
}

// setCut cuts (closing every open connection and refusing new ones) or
// restores the link.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for c := range p.conns {
			_ = c.Close()
		}
		clear(p.conns)
	}
}

// timedCall calls a tool over gRPC and returns the outcome and duration.
func timedCall(t *testing.T, s *testserver.Server, tool string, args map[string]any) (outcome, time.Duration) {
	t.Helper()
	return timedCallWith(t, s, tool, args, nil)
}

// timedCallWith is timedCall with request headers (gRPC metadata).
func timedCallWith(t *testing.T, s *testserver.Server, tool string, args map[string]any, headers map[string]string) (outcome, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	o, err := grpcCall(ctx, s.Conn, "", tool, args, headers)
	if err != nil {
		t.Fatal(err)
	}
	return o, time.Since(start)
}

// TestPostgresUnreachable cuts the link to PostgreSQL mid-load: calls that
// need the store answer PROVIDER_ERROR within their deadline, retryable for
// a read and for a write that carries an idempotency key (a write without
// one may have had its effect), and once the link is back the
// same toolsvc recovers without a restart.
func TestPostgresUnreachable(t *testing.T) {
	dsn := testserver.PostgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	px := newProxy(t, u.Host)
	u.Host = px.Addr()
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
		c.DB = u.String()
		c.Chain.Deadlines = interceptors.Deadlines{Fast: 2 * time.Second, Medium: 3 * time.Second, Slow: 5 * time.Second}
	}})
	add := map[string]any{"content": "written while PostgreSQL answers"}
	if o, _ := timedCall(t, s, "add-memory", add); o.Code != "OK" {
		t.Fatalf("before the cut: %+v", o)
	}
	px.setCut(true)
	for _, tool := range []string{"add-memory", "search-memories"} {
		args := add
		if tool == "search-memories" {
			args = map[string]any{"query": "uncached words " + randomWord()}
		}
		var headers map[string]string
		if tool == "add-memory" {
			headers = map[string]string{"idempotency-key": "cut-" + randomWord()}
		}
		o, d := timedCallWith(t, s, tool, args, headers)
		if o.Code != "PROVIDER_ERROR" && o.Code != "TIMEOUT" {
			t.Fatalf("%s while PostgreSQL is unreachable: code = %s (%s), want PROVIDER_ERROR", tool, o.Code, o.Message)
		}
		if r, _ := o.Error["retryable"].(bool); !r {
			t.Errorf("%s: %s is not retryable", tool, o.Code)
		}
		if d > 6*time.Second {
			t.Errorf("%s took %s while PostgreSQL was unreachable: the deadline was not honoured", tool, d)
		}
		t.Logf("%s while cut: %s after %s (%s)", tool, o.Code, d.Round(time.Millisecond), o.Message)
	}
	px.setCut(false)
	waitFor(t, "recovery after PostgreSQL is reachable again", func() bool {
		o, _ := timedCall(t, s, "add-memory", map[string]any{"content": "written after recovery " + randomWord()})
		return o.Code == "OK"
	})
}

// TestRedisUnreachable cuts the link to Redis: with the default fail-closed
// policy rate-limited calls are refused fast and retryable, with
// --rate-limit-fail-open they are admitted; neither hangs, and both recover.
func TestRedisUnreachable(t *testing.T) {
	base := os.Getenv("TOOLSVC_TEST_REDIS")
	if base == "" {
		t.Skip("TOOLSVC_TEST_REDIS is not set; run the tests with `make test`, which sets it")
	}
	ru, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		failOpen bool
	}{
		{name: "fail closed", failOpen: false},
		{name: "fail open", failOpen: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			px := newProxy(t, ru.Host)
			u := *ru
			u.Host = px.Addr()
			s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
				c.Redis = u.String()
				c.RateLimitFailOpen = tc.failOpen
			}})
			args := func() map[string]any { return map[string]any{"query": "redis outage " + randomWord()} }
			// Redis answers through the proxy first (its client's 500 ms
			// timeouts can trip on a loaded machine, hence the retries).
			waitFor(t, "a call admitted through Redis before the cut", func() bool {
				o, _ := timedCall(t, s, "search-memories", args())
				return o.Code == "OK"
			})
			px.setCut(true)
			o, d := timedCall(t, s, "search-memories", args())
			t.Logf("while Redis is cut: %s after %s (%s)", o.Code, d.Round(time.Millisecond), o.Message)
			if d > 3*time.Second {
				t.Errorf("a call took %s while Redis was unreachable: it must not hang", d)
			}
			if tc.failOpen && o.Code != "OK" {
				t.Errorf("fail open: code = %s (%s), want OK", o.Code, o.Message)
			}
			if !tc.failOpen {
				if o.Code != "PROVIDER_ERROR" {
					t.Errorf("fail closed: code = %s (%s), want PROVIDER_ERROR (the limiter is unavailable)", o.Code, o.Message)
				} else if r, _ := o.Error["retryable"].(bool); !r {
					t.Errorf("fail closed: %s is not retryable", o.Code)
				}
			}
			px.setCut(false)
			waitFor(t, "recovery after Redis is reachable again", func() bool {
				o, _ := timedCall(t, s, "search-memories", args())
				return o.Code == "OK"
			})
		})
	}
}

// TestSlowEmbeddings points the memory tools at an embeddings endpoint that
// answers after 5 s: search-memories still answers within its deadline,
// ranked lexically with a warning that the embeddings endpoint failed.
func TestSlowEmbeddings(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		case <-release:
		}
		http.Error(w, "too late", http.StatusServiceUnavailable)
	}))
	defer slow.Close()
	defer close(release)
	s := testserver.New(t, testserver.Options{Configure: func(c *server.Config) {
		c.EmbeddingsURL = slow.URL
		c.Chain.Deadlines = interceptors.Deadlines{Fast: 700 * time.Millisecond, Medium: 2 * time.Second, Slow: 5 * time.Second}
	}})
	seedMemory(t, s, "The billing team prefers PostgreSQL for ledgers")
	o, d := timedCall(t, s, "search-memories", map[string]any{"query": "billing ledgers", "threshold": 0})
	t.Logf("search with slow embeddings: %s after %s", o.Code, d.Round(time.Millisecond))
	if d > 2*time.Second {
		t.Fatalf("search took %s with a 700ms deadline: the deadline was not honoured", d)
	}
	// The embeddings call gets half the remaining deadline, so the search
	// degrades to full text rather than timing out.
	if o.Code != "OK" {
		t.Fatalf("code = %s (%s), want a degraded OK ranked by full text", o.Code, o.Message)
	}
	if !strings.Contains(strings.ToLower(strings.Join(warnings(o), " ")), "embeddings") {
		t.Errorf("a degraded (lexical) result must say so in its warnings: %v", warnings(o))
	}
}

// warnings returns the messages of a result's agentHints.warnings.
func warnings(o outcome) []string {
	h, _ := o.Result["agentHints"].(map[string]any)
	ws, _ := h["warnings"].([]any)
	var out []string
	for _, w := range ws {
		if m, ok := w.(map[string]any); ok {
			if s, ok := m["message"].(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}
