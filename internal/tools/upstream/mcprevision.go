package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/base/mcpclient"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
)

// What revision 2026-07-28 changes for toolsvc as a client: no initialize
// and no session; server/discover says whether the server speaks it (any
// other answer, with mcp.protocol auto, falls back to the 2025 handshake,
// as the Go SDK's client does); every request carries the revision, the
// client's identity and capabilities in _meta and, over HTTP, the
// MCP-Protocol-Version, Mcp-Method and (for a named target) Mcp-Name
// headers; the server's notifications come on a subscriptions/listen
// stream; tools/list results carry a cache lifetime (ttlMs), which toolsvc
// honours (mcp.go); a question is an input_required result (mcpask.go);
// cancelling a request over HTTP is aborting its POST.

// Keys of a 2026-07-28 request's _meta.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// Headers of revision 2026-07-28 on Streamable HTTP.
const (
	HeaderMcpMethod = mcpclient.HeaderMethod
	HeaderMcpName   = mcpclient.HeaderName
)

const (
	methodDiscover = "server/discover"
	methodListen   = "subscriptions/listen"
	// notificationListening is the server's first message on a listen
	// stream: from then on, no change is missed.
	notificationListening = "notifications/subscriptions/acknowledged"
)

// clientInfo is toolsvc as an MCP client.
var clientInfo = map[string]any{"name": "toolsvc", "version": "1"}

// askCapabilities are the client capabilities toolsvc declares when it
// can relay a server's questions: elicitation in both modes and sampling,
// which reach the client that made the call (callctx.Ask).
func askCapabilities() map[string]any {
	return map[string]any{
		"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
		"sampling":    map[string]any{},
	}
}

// modernMeta is the _meta every 2026-07-28 request carries. It declares
// the capabilities to ask only when the call has someone to ask: a
// request outside a call (tools/list) or of a caller whose transport
// cannot be asked declares none, so a server does not ask in vain.
func modernMeta(ctx context.Context) map[string]any {
	caps := map[string]any{}
	if callctx.CanAsk(ctx) {
		caps = askCapabilities()
	}
	return map[string]any{metaProtocolVersion: Revision2026, metaClientInfo: clientInfo, metaClientCapabilities: caps}
}

// modernHeaders are hdr and the headers of a 2026-07-28 request over HTTP:
// its revision, its method and the name or URI it targets, which a proxy
// routes on and the server checks against the body.
func modernHeaders(hdr http.Header, method string, params map[string]any) http.Header {
	h := http.Header{}
	if hdr != nil {
		h = hdr.Clone()
	}
	h.Set(mcpclient.HeaderProtocolVersion, Revision2026)
	h.Set(HeaderMcpMethod, method)
	field := ""
	switch method {
	case "tools/call", "prompts/get":
		field = "name"
	case "resources/read", "resources/subscribe":
		field = "uri"
	}
	if v, ok := params[field].(string); ok && field != "" {
		h.Set(HeaderMcpName, headerValue(v))
	}
	return h
}

// headerValue is v as an Mcp-Name value: as it is when it is visible
// ASCII without surrounding spaces, else the =?base64?...?= form.
func headerValue(v string) string {
	plain := v != "" && v[0] != ' ' && v[len(v)-1] != ' ' && !strings.HasPrefix(v, "=?base64?")
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] < 0x7f
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// errNotModern: server/discover answered, without 2026-07-28 among the
// revisions it supports.
var errNotModern = errors.New("the server does not list " + Revision2026 + " among its supported versions")

// discover asks the server whether it speaks 2026-07-28 and offers tools.
func (c *mcpClient) discover(ctx context.Context) error {
	res, err := c.request(ctx, methodDiscover, map[string]any{}, nil, Revision2026)
	if err != nil {
		return err
	}
	var versions []string
	if raw := jsonrpc.Member(res, "supportedVersions"); raw == nil || json.Unmarshal(raw, &versions) != nil {
		return fmt.Errorf("%w (its server/discover result has no supportedVersions)", errNotModern)
	}
	if !slices.Contains(versions, Revision2026) {
		return fmt.Errorf("%w (it lists %v)", errNotModern, versions)
	}
	if jsonrpc.Member(jsonrpc.Member(res, "capabilities"), "tools") == nil {
		return errors.New("the server does not offer tools (no tools capability)")
	}
	return nil
}

// fallsBack reports whether a failed server/discover means the server
// speaks only the 2025 revision: a JSON-RPC error (method not found, an
// unsupported revision, a missing session...), an HTTP 4xx that is not a
// refused credential, or a list of revisions without 2026-07-28. An
// unreachable server, a refused credential or a timeout are not answers.
func fallsBack(err error) bool {
	var re *jsonrpc.Error
	var he *httpStatusError
	switch {
	case errors.As(err, &re), errors.Is(err, errNotModern):
		return true
	case errors.As(err, &he):
		return he.code >= 400 && he.code < 500
	}
	return false
}

// listening marks the open listen stream acknowledged.
func (c *mcpClient) listening() {
	if p := c.acked.Load(); p != nil {
		c.ackOnce(*p)
	}
}

// ackOnce closes ch unless it is closed.
func (c *mcpClient) ackOnce(ch chan struct{}) {
	c.ackMu.Lock()
	defer c.ackMu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// waitListening waits, at most d, for the first listen stream's
// acknowledgment, so that the first listing misses no change made after
// it. A server that never acknowledges costs d once.
func (c *mcpClient) waitListening(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		if p := c.acked.Load(); p != nil {
			select {
			case <-*p:
			case <-t.C:
			}
			return
		}
		select {
		case <-t.C:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// listenModern keeps a subscriptions/listen request open for the server's
// notifications/tools/list_changed (the 2026 revision's replacement of the
// GET stream), opening it again with a growing pause when it ends, until
// the client closes or the server answers that it offers no subscription.
//
// A change made while no listen stream is acknowledged would be missed,
// so each stream acknowledged after the first (the first is waited for
// before the first listing, waitListening) reads the tools again.
func (c *mcpClient) listenModern(stop chan struct{}) {
	pause := 500 * time.Millisecond
	for round := 0; c.revision() == Revision2026; round++ {
		acked := make(chan struct{})
		c.acked.Store(&acked)
		if round > 0 {
			go func() {
				select {
				case <-acked:
					c.onNotify("notifications/tools/list_changed")
				case <-stop:
				}
			}()
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		// Resource and prompt list changes are asked for too: notified
		// relays only those of what the operator granted.
		params := map[string]any{"notifications": map[string]any{"toolsListChanged": true, "resourcesListChanged": true, "promptsListChanged": true}}
		params["_meta"] = modernMeta(ctx)
		id := c.next.Add(1)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": methodListen, "params": params})
		start := time.Now()
		msg, err := c.t.roundTrip(ctx, body, id, modernHeaders(nil, methodListen, params))
		cancel()
		if err == nil && msg != nil && len(msg.Error) > 0 {
			return // the server has no subscriptions: nothing to hear
		}
		select {
		case <-stop:
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 30*time.Second)
		if time.Since(start) > time.Minute {
			pause = 500 * time.Millisecond
		}
	}
}
