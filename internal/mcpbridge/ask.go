package mcpbridge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// Questions back to the client (callctx.Asker). A tool (an upstream MCP
// tool whose server asks) puts an "elicitation/create" or
// "sampling/createMessage" to the client that made the call; the bridge
// carries it as the call's revision has it:
//
//   - 2025 era: a server-to-client JSON-RPC request on the call's own
//     stream (the POST's event stream, stdio's output), whose response the
//     client sends as a message of its own (a POST, a line of stdin),
//     perhaps to another replica of a fleet: the replica that has no such
//     question waiting tells the fleet (fanout "answer"), and the one
//     running the call takes it;
//   - 2026-07-28: an input_required result (SEP-2322) naming the questions
//     and a requestState, which the client sends back with its answers in
//     a new tools/call (mrtr.go).
//
// A client that did not declare the capability a question needs is
// refused at once, with a ToolError naming it: toolsvc never invents an
// answer, and never changes a question (URL-mode elicitation passes
// through as the tool wrote it).

// Methods a tool may ask.
const (
	methodElicit   = "elicitation/create"
	methodSampling = "sampling/createMessage"
)

// askCaps are what a client declared it can be asked.
type askCaps struct {
	elicitForm, elicitURL, sampling, samplingTools bool
}

// any reports whether the client can be asked anything.
func (c askCaps) askable() bool { return c.elicitForm || c.elicitURL || c.sampling }

// parseAskCaps reads the capabilities object of initialize (2025) or of a
// request's _meta clientCapabilities (2026-07-28). An empty elicitation
// object declares form mode (the revision's backwards compatibility).
func parseAskCaps(raw json.RawMessage) askCaps {
	var c struct {
		Elicitation *struct {
			Form json.RawMessage `json:"form"`
			URL  json.RawMessage `json:"url"`
		} `json:"elicitation"`
		Sampling *struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"sampling"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &c) != nil {
		return askCaps{}
	}
	var out askCaps
	if e := c.Elicitation; e != nil {
		out.elicitForm = isObject(e.Form) || (!isObject(e.Form) && !isObject(e.URL))
		out.elicitURL = isObject(e.URL)
	}
	if s := c.Sampling; s != nil {
		out.sampling, out.samplingTools = true, isObject(s.Tools)
	}
	return out
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// String is the session registry's form of c ("form,url,sampling,tools").
func (c askCaps) String() string {
	var s []string
	for _, f := range []struct {
		on   bool
		name string
	}{{c.elicitForm, "form"}, {c.elicitURL, "url"}, {c.sampling, "sampling"}, {c.samplingTools, "tools"}} {
		if f.on {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, ",")
}

// askCapsField reads the registry's form of askCaps.
func askCapsField(v string) askCaps {
	var c askCaps
	for _, f := range strings.Split(v, ",") {
		switch f {
		case "form":
			c.elicitForm = true
		case "url":
			c.elicitURL = true
		case "sampling":
			c.sampling = true
		case "tools":
			c.samplingTools = true
		}
	}
	return c
}

// reasonMissingCapability is the ToolError's details.reason when the
// client cannot be asked what the tool asks.
const reasonMissingCapability = "MISSING_CLIENT_CAPABILITY"

// cannotAsk is the ToolError of a question the client cannot take.
func cannotAsk(capability, format string, args ...any) error {
	return toolerr.New(toolerr.InvalidInput, format, args...).NoEffect().
		WithDetails(map[string]any{"reason": reasonMissingCapability, "capability": capability})
}

// admitQuestion checks that a client of revision with caps can be asked
// method with params; the error names what it lacks.
func admitQuestion(caps askCaps, revision, method string, params json.RawMessage) error {
	switch method {
	case methodElicit:
		var p struct {
			Mode string `json:"mode"`
		}
		_ = json.Unmarshal(params, &p)
		if revision != "" && revision < Revision20250618 {
			return cannotAsk("elicitation", "the client cannot be asked a question: MCP revision %s has no elicitation (2025-06-18 and later do)", revision)
		}
		if p.Mode == "url" {
			if revision != "" && revision < Revision20251125 {
				return cannotAsk("elicitation.url", "the client cannot be sent to a URL: MCP revision %s has no URL-mode elicitation (2025-11-25 and later do)", revision)
			}
			if !caps.elicitURL {
				return cannotAsk("elicitation.url", "the client did not declare URL-mode elicitation (capabilities.elicitation.url), so it cannot be sent to a URL")
			}
			return nil
		}
		if !caps.elicitForm {
			if caps.elicitURL {
				return cannotAsk("elicitation.form", "the client did not declare form-mode elicitation (capabilities.elicitation.form), only URL mode")
			}
			return cannotAsk("elicitation", "the client did not declare the elicitation capability, so it cannot be asked a question")
		}
		return nil
	case methodSampling:
		if !caps.sampling {
			return cannotAsk("sampling", "the client did not declare the sampling capability, so its model cannot be asked")
		}
		if bytes.Contains(params, []byte(`"tools"`)) {
			var p struct {
				Tools json.RawMessage `json:"tools"`
			}
			if json.Unmarshal(params, &p) == nil && len(p.Tools) > 0 && string(p.Tools) != "null" && !caps.samplingTools {
				return cannotAsk("sampling.tools", "the client did not declare sampling with tools (capabilities.sampling.tools)")
			}
		}
		return nil
	}
	return toolerr.New(toolerr.Internal, "toolsvc asks clients only %s and %s, not %q", methodElicit, methodSampling, method)
}

// askOwner is whom an exchange's questions and answers belong to: the
// session's owner, else the principal (stdio: its one peer).
func askOwner(x *exchange) string {
	if x.peer != nil {
		return x.peer.owner
	}
	return principalKey(x.principal)
}

// ownerTag is a tag of s (12 bytes of its SHA-256, in hex): an owner as
// the fleet hears it, a replica as a requestState names it.
func ownerTag(owner string) string {
	h := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(h[:12])
}

// reply is a client's answer to one question: its result or its error.
type reply struct {
	result json.RawMessage
	err    json.RawMessage
}

// waitingQuestion is a 2025 question sent and not yet answered.
type waitingQuestion struct {
	owner string
	ch    chan reply
}

// exchangeAsker asks a 2025-era client with a server-to-client request
// on the stream of the call of x (x.bridge set): the exchange itself, so
// that attaching it to a call costs nothing but the context value.
type exchangeAsker exchange

// Fanout messages of questions: "answer <owner> <response>", a 2025
// client's answer heard by a replica that has no such question waiting.
const fanAnswer = "answer"

func (a *exchangeAsker) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	x := (*exchange)(a)
	if x.peer == nil {
		return nil, cannotAsk(capabilityOf(method), "the client cannot be asked: this stateless server keeps no session, so it knows no capability of the client (initialize declared them)")
	}
	if err := admitQuestion(x.peer.askCaps(), x.rev.String(), method, params); err != nil {
		return nil, err
	}
	send := x.ask
	if send == nil {
		why := "the call's response cannot carry a question: send tools/call with Accept: application/json, text/event-stream"
		if x.batch {
			why = "a call of a JSON-RPC batch cannot carry a question"
		}
		return nil, cannotAsk(capabilityOf(method), "the client cannot be asked: %s", why)
	}
	b := x.bridge
	id := "toolsvc-ask-" + newSessionID()
	w := &waitingQuestion{owner: askOwner(x), ch: make(chan reply, 1)}
	b.questions.Store(id, w)
	defer b.questions.Delete(id)
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, toolerr.New(toolerr.InvalidInput, "the question's params are not JSON: %v", err)
	}
	if err := send(msg); err != nil {
		return nil, toolerr.New(toolerr.Timeout, "the client's stream closed before the question was sent")
	}
	select {
	case r := <-w.ch:
		return answerOf(method, r)
	case <-ctx.Done():
		// The question is withdrawn (MCP cancellation), on the same stream.
		_ = send(framing.EncodeNotification("notifications/cancelled", map[string]any{"requestId": id, "reason": "the tool call ended"}))
		return nil, ctx.Err()
	}
}

// ElicitationComplete tells a 2025 client that a URL-mode elicitation it
// was asked has completed (notifications/elicitation/complete, relayed
// from the tool's server), on its session's GET streams or stdio's output
// (this replica's); the 2026-07-28 revision has no such notification.
func (a *exchangeAsker) ElicitationComplete(elicitationID string) {
	x := (*exchange)(a)
	if x.peer == nil {
		return
	}
	x.peer.notify(framing.EncodeNotification("notifications/elicitation/complete", map[string]any{"elicitationId": elicitationID}))
}

// capabilityOf names the capability method needs.
func capabilityOf(method string) string {
	if method == methodSampling {
		return "sampling"
	}
	return "elicitation"
}

// answerOf is the tool's view of a client's reply: its result, or a
// ToolError carrying the client's JSON-RPC error.
func answerOf(method string, r reply) (json.RawMessage, error) {
	if len(r.err) == 0 {
		return r.result, nil
	}
	var e framing.Error
	_ = json.Unmarshal(r.err, &e)
	return nil, toolerr.New(toolerr.ProviderError, "the client answered %s with an error: %s (%d)", method, e.Message, e.Code).
		WithDetails(map[string]any{"reason": "CLIENT_ERROR", "rpcCode": e.Code})
}

// answered takes a client's response (a message with no method): the
// answer to one of the questions sent on a call's stream, here or, in a
// fleet, on another replica.
func (b *Bridge) answered(x *exchange, m *framing.Message) {
	id, ok := questionID(m.ID)
	if !ok {
		return // not an answer to toolsvc's question: ignored, as before
	}
	owner := askOwner(x)
	if b.deliver(id, ownerTag(owner), reply{result: m.Result, err: m.Error}, owner) {
		return
	}
	if b.cfg.Fanout == nil {
		return
	}
	// Its members copied, so that m itself (every message's) stays off
	// the heap.
	raw, err := json.Marshal(framing.Message{JSONRPC: m.JSONRPC, ID: m.ID, Result: m.Result, Error: m.Error})
	if err != nil {
		return
	}
	b.publish(fanAnswer + " " + ownerTag(owner) + " " + string(raw))
}

// questionID reads the id of a response as one of toolsvc's questions'.
func questionID(raw json.RawMessage) (string, bool) {
	var id string
	if json.Unmarshal(raw, &id) != nil || !strings.HasPrefix(id, "toolsvc-ask-") {
		return "", false
	}
	return id, true
}

// deliver hands r to question id of this replica if it waits here for an
// answer of the owner tagged tag (owner, when known here, is checked
// whole).
func (b *Bridge) deliver(id, tag string, r reply, owner string) bool {
	v, ok := b.questions.Load(id)
	if !ok {
		return false
	}
	w := v.(*waitingQuestion)
	if ownerTag(w.owner) != tag || (owner != "" && w.owner != owner) {
		return false
	}
	select {
	case w.ch <- r:
	default: // answered already
	}
	return true
}

// heardAnswer applies a fanout "answer": another replica received the
// answer to a question of a call this replica may be running.
func (b *Bridge) heardAnswer(rest string) {
	tag, raw, ok := strings.Cut(rest, " ")
	if !ok {
		return
	}
	var m framing.Message
	if json.Unmarshal([]byte(raw), &m) != nil {
		return
	}
	if id, ok := questionID(m.ID); ok {
		b.deliver(id, tag, reply{result: m.Result, err: m.Error}, "")
	}
}
