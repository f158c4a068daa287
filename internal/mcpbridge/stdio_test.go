package mcpbridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// stdioConn runs ServeStdio on pipes.
type stdioConn struct {
	tb   testing.TB
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func startStdio(tb testing.TB, b *mcpbridge.Bridge, authorization string) *stdioConn {
	tb.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &stdioConn{tb: tb, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	c.out.Buffer(make([]byte, 1<<20), 16<<20)
	go func() {
		c.done <- b.ServeStdio(context.Background(), inR, outW, authorization)
		outW.Close()
	}()
	tb.Cleanup(func() {
		inW.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			tb.Error("ServeStdio did not return after stdin closed")
		}
	})
	return c
}

func (c *stdioConn) send(line string) {
	c.tb.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.tb.Fatal(err)
	}
}

// next reads the next message from stdout.
func (c *stdioConn) next() response {
	c.tb.Helper()
	if !c.out.Scan() {
		c.tb.Fatalf("stdout ended: %v", c.out.Err())
	}
	var r response
	if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
		c.tb.Fatalf("stdout line %q is not JSON-RPC: %v", c.out.Bytes(), err)
	}
	return r
}

// TestStdio serves the real wiring over stdio: initialize, every page of
// tools/list, a tools/call, and protocol faults, each line one message.
func TestStdio(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	c := startStdio(t, srv.MCP(), "")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"desk","version":"1.0"}}}`)
	if r := c.next(); r.Error != nil || !strings.Contains(string(r.Result), `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize = %s %+v", r.Result, r.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var list struct{ Tools []map[string]any }
	if r := c.next(); r.Error != nil || json.Unmarshal(r.Result, &list) != nil || len(list.Tools) != srv.Registry().Len() {
		t.Fatalf("tools/list = %s %+v", r.Result, r.Error)
	}
	c.send(`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`)
	var res toolResult
	if r := c.next(); string(r.ID) != `"three"` || json.Unmarshal(r.Result, &res) != nil || res.IsError || res.StructuredContent["data"] == nil {
		t.Fatalf("tools/call = %s %+v", r.Result, r.Error)
	}
	for _, tc := range []struct {
		name, line string
		code       int
	}{
		{name: "malformed", line: `{"jsonrpc":`, code: -32700},
		{name: "unknown method", line: `{"jsonrpc":"2.0","id":4,"method":"nope"}`, code: -32601},
		{name: "null id", line: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: -32600},
		{name: "batch on 2025-06-18", line: `[{"jsonrpc":"2.0","id":5,"method":"ping"}]`, code: -32600},
	} {
		c.send(tc.line)
		if r := c.next(); r.Error == nil || r.Error.Code != tc.code {
			t.Errorf("%s: %s %+v, want %d", tc.name, r.Result, r.Error, tc.code)
		}
	}
}

// TestStdioUnauthenticated: with an auth file and a bad token, listings are
// refused and calls report the chain's UNAUTHORIZED.
func TestStdioUnauthenticated(t *testing.T) {
	t.Parallel()
	srv := newAuthServer(t, nil)
	c := startStdio(t, srv.MCP(), "Bearer wrong-token-000000000000")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if r := c.next(); r.Error == nil || r.Error.Code != mcpbridge.CodeUnauthorized {
		t.Fatalf("tools/list = %s %+v", r.Result, r.Error)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get-sync-status","arguments":{"bogus":1}}}`)
	var res toolResult
	if r := c.next(); json.Unmarshal(r.Result, &res) != nil || !res.IsError || res.StructuredContent["code"] != "UNAUTHORIZED" {
		t.Fatalf("tools/call = %s %+v (authentication must come before input errors)", r.Result, r.Error)
	}
}

// blockingChannel is a channel whose calls wait for their context and
// record the metadata they were sent with.
type blockingChannel struct {
	started chan metadata.MD
	ended   chan error
}

func (c *blockingChannel) Invoke(ctx context.Context, _ string, _, _ any, _ ...grpc.CallOption) error {
	md, _ := metadata.FromOutgoingContext(ctx)
	c.started <- md
	<-ctx.Done()
	c.ended <- ctx.Err()
	return status.FromContextError(ctx.Err()).Err()
}

func (c *blockingChannel) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "no streams")
}

// TestCancellation: notifications/cancelled ends the in-flight call's
// context, and the call carried the clientInfo as agent id and version.
func TestCancellation(t *testing.T) {
	t.Parallel()
	srv := newServer(t, nil)
	ch := &blockingChannel{started: make(chan metadata.MD, 1), ended: make(chan error, 1)}
	b, err := mcpbridge.New(mcpbridge.Config{Registry: srv.Registry(), Channel: ch, Auth: auth.NewDevelopment()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	c := startStdio(t, b, "Bearer forwarded-token")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"canceller","version":"2.5"}}}`)
	c.next()
	c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`)
	md := <-ch.started
	if got := md.Get("x-agent-id"); len(got) != 1 || got[0] != "canceller" {
		t.Errorf("x-agent-id = %v, want the clientInfo name", got)
	}
	if got := md.Get("x-agent-version"); len(got) != 1 || got[0] != "2.5" {
		t.Errorf("x-agent-version = %v", got)
	}
	if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer forwarded-token" {
		t.Errorf("authorization = %v", got)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"user gave up"}}`)
	select {
	case err := <-ch.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("call ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("notifications/cancelled did not cancel the call")
	}
	if r := c.next(); string(r.ID) != "9" {
		t.Fatalf("response = %+v", r)
	}
}
