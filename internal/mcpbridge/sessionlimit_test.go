package mcpbridge_test

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/mcpbridge"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// sessionLimit is the per-principal session bound of the tests below.
const sessionLimit = 3

// limitedFleet starts two replicas of one fleet (fleet) whose principals
// hold at most sessionLimit sessions each.
func limitedFleet(t *testing.T) (a, b *testserver.Server) {
	t.Helper()
	cfg := fleet(t)
	limited := func(c *server.Config) { cfg(c); c.MCP.SessionsPerPrincipal = sessionLimit }
	return newAuthServer(t, limited), newAuthServer(t, limited)
}

// mcpPost posts a JSON-RPC body as keyAll to base's /mcp, with session
// sid when not empty; the status and Mcp-Session-Id of the answer.
func mcpPost(base, sid, body string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+keyAll)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), nil
}

// openOn opens a 2025-11-25 session as keyAll on base; its id.
func openOn(base string) (string, error) {
	code, sid, err := mcpPost(base, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"limit","version":"1"}}}`)
	if err == nil && (code != http.StatusOK || sid == "") {
		err = fmt.Errorf("initialize on %s: HTTP %d, session %q", base, code, sid)
	}
	return sid, err
}

// aliveSessions are the sessions of ids that answer a ping on one of
// bases at least (404 on all of them: ended), and for each of them the
// bases it answered on (a failure says whether a replica served from its
// cache a session the registry had ended).
func aliveSessions(t *testing.T, ids []string, bases ...string) ([]string, map[string][]string) {
	t.Helper()
	var alive []string
	on := map[string][]string{}
	for _, id := range ids {
		for _, base := range bases {
			code, _, err := mcpPost(base, id, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			if err != nil || (code != http.StatusOK && code != http.StatusNotFound) {
				t.Fatalf("ping of %s on %s: HTTP %d %v", id, base, code, err)
			}
			if code == http.StatusOK {
				on[id] = append(on[id], base)
			}
		}
		if len(on[id]) > 0 {
			alive = append(alive, id)
		}
	}
	return alive, on
}

// fleetEars hears what two replicas apply of the fleet's messages.
type fleetEars struct {
	t    *testing.T
	a, b *testserver.Server
	// endedOnA are the sessions A heard ended.
	endedOnA chan string
	markers  map[*testserver.Server]chan string
}

func hearFleet(t *testing.T, a, b *testserver.Server) *fleetEars {
	e := &fleetEars{t: t, a: a, b: b, endedOnA: make(chan string, 64),
		markers: map[*testserver.Server]chan string{a: make(chan string, 64), b: make(chan string, 64)}}
	for s, markers := range e.markers {
		mcpbridge.OnFanoutHeard(s.MCP(), func(msg string) {
			kind, rest, _ := strings.Cut(msg, " ")
			to := markers
			if kind == "end" && s == a {
				to = e.endedOnA
			} else if kind != "marker" {
				return
			}
			select {
			case to <- rest:
			default: // a full channel: the test has what it needs
			}
		})
	}
	return e
}

// settle returns once both replicas have applied every message published
// before it: it publishes a marker, again every 100ms until both have
// heard it (a replica still subscribing misses what comes before its
// subscription).
func (e *fleetEars) settle() {
	e.t.Helper()
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	want := hex.EncodeToString(nonce[:])
	deadline := time.Now().Add(10 * time.Second)
	for s, ch := range e.markers {
		for heard := ""; heard != want; {
			mcpbridge.Publish(e.a.MCP(), "marker "+want)
			select {
			case heard = <-ch:
			case <-time.After(100 * time.Millisecond):
			}
			if heard != want && time.Now().After(deadline) {
				e.t.Fatalf("replica %s did not hear the marker within 10s", s.HTTP)
			}
		}
	}
}

// TestSessionLimitEndHeardBeforeAdmissionAnswered: replica A's
// registry admits a session, and before A's own open returns, replica B
// opens the bound's worth of newer sessions, evicting it, and A hears
// that end. The evicted session must not then be served from A's cache:
// exactly sessionLimit sessions answer, on either replica. It failed
// before A watched the id from before it asked the registry (A cached the
// session after the end it had already heard: 4 sessions with limit 3).
func TestSessionLimitEndHeardBeforeAdmissionAnswered(t *testing.T) {
	t.Parallel()
	a, b := limitedFleet(t)
	ears := hearFleet(t, a, b)
	ears.settle() // both replicas hear the fleet
	type forced struct {
		onB []string
		err error
	}
	done := make(chan forced, 1)
	var once sync.Once
	mcpbridge.OnSessionAdmitted(a.MCP(), func(id string) {
		once.Do(func() {
			var f forced
			defer func() { done <- f }()
			for range sessionLimit {
				sid, err := openOn(b.HTTP)
				if err != nil {
					f.err = err
					return
				}
				f.onB = append(f.onB, sid)
			}
			deadline := time.After(10 * time.Second)
			for {
				select {
				case e := <-ears.endedOnA:
					if e == id {
						return
					}
				case <-deadline:
					f.err = errors.New("A did not hear within 10s that B's opens ended its session")
					return
				}
			}
		})
	})
	first, err := openOn(a.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	f := <-done
	if f.err != nil {
		t.Fatal(f.err)
	}
	alive, on := aliveSessions(t, append([]string{first}, f.onB...), a.HTTP, b.HTTP)
	if len(alive) != sessionLimit || slices.Contains(alive, first) {
		t.Fatalf("alive after B's opens evicted A's first session: %d %v (A's %s), want B's %d", len(alive), on, first, sessionLimit)
	}
}

// TestSessionLimitParallelOpens: 30 rounds of 20 parallel
// initialize calls, alternately on two replicas, for one principal with
// the limit 3. After each round, once both replicas have applied every
// message the round published (a marker sent after them has reached
// both), exactly 3 of the principal's sessions answer, on either replica.
// Round 0 starts as soon as the replicas serve, perhaps before they hear
// the fleet: what they cached meanwhile is checked again once they do.
func TestSessionLimitParallelOpens(t *testing.T) {
	t.Parallel()
	a, b := limitedFleet(t)
	// Not settled first: the replicas may still be subscribing while
	// round 0 opens sessions, as a replica just started does.
	ears := hearFleet(t, a, b)
	const rounds, opens = 30, 20
	var alive []string
	for round := range rounds {
		ids, errs := make([]string, opens), make([]error, opens)
		var wg sync.WaitGroup
		for i := range opens {
			base := a.HTTP
			if i%2 == 1 {
				base = b.HTTP
			}
			wg.Go(func() { ids[i], errs[i] = openOn(base) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		ears.settle()
		var on map[string][]string
		alive, on = aliveSessions(t, append(alive, ids...), a.HTTP, b.HTTP)
		if len(alive) != sessionLimit {
			t.Fatalf("round %d: %d sessions answer with the limit %d (A %s, B %s): %v", round, len(alive), sessionLimit, a.HTTP, b.HTTP, on)
		}
	}
}
