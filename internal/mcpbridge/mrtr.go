package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// Questions to a 2026-07-28 client (SEP-2322, multi-round-trip requests).
// A tools/call whose _meta declares elicitation or sampling runs apart
// from its request; while the tool runs, the request waits for either its
// result or a question. A question answers the request with
//
//	{"resultType":"input_required","inputRequests":{"q1":{"method":"elicitation/create","params":{...}}},"requestState":"..."}
//
// and the call goes on waiting (the tool is blocked in callctx.Ask). The
// client sends the same tools/call again with "inputResponses" (each
// key's bare result) and "requestState" echoed; the answers go to the
// waiting questions and that request waits as the first did, for the
// result or the next questions.
//
// The call's state stays where the call runs: requestState names the
// replica (by a hash of its id) and a random 128-bit call id, nothing
// else: there is nothing in it to forge or replay. A follow-up that
// lands on another replica of a fleet is forwarded to the named one on
// the fleet's bus (fanout "resume"), which answers it there and sends
// back what its request would have answered (fanout "resumed"). Keeping
// the call running, rather than sealing its state and running it again,
// is what an upstream's question needs: the upstream call is open, and
// only the replica holding it can answer the upstream.
//
// The state is bound to the principal that made the call: another
// principal's follow-up with the same requestState is told it names no
// call, as is a follow-up after the call ended, was cancelled, or waited
// more than askWait for its answers.

// askWait is how long a call waits for the follow-up that answers its
// questions before it is cancelled.
const askWait = 10 * time.Minute

// relayAck is how long a replica forwarding a follow-up waits for the
// replica named in its requestState to say it has the call.
const relayAck = 5 * time.Second

// resultInputRequired is the resultType of a result asking for input.
const resultInputRequired = "input_required"

// Fanout messages of follow-ups: "resume <tag> <from> <relay> <call>
// <json>" asks the replica of tag (requestState) to answer a follow-up of
// its call received by replica from;
// "resumed <from> <relay> <kind> <json>" is its answer (kind: ack,
// result, error).
const (
	fanResume  = "resume"
	fanResumed = "resumed"
)

// question is one question of a running call.
type question struct {
	key, method string
	params      json.RawMessage
	reply       chan json.RawMessage
}

// mrtrCall is a tools/call of a 2026-07-28 client that may ask.
type mrtrCall struct {
	id, owner, tool string
	caps            askCaps
	cancel          context.CancelFunc
	asks            chan *question
	done            chan struct{}
	result          []byte
	err             error

	// notes carries the call's notifications (progress, log messages) to
	// the request waiting on it, if any.
	notes notes

	mu       sync.Mutex
	seq      int
	pending  map[string]*question
	resuming bool
	expiry   *time.Timer
}

// Ask puts a question to the client of the call: the request waiting on
// the call answers input_required with it.
func (c *mrtrCall) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if err := admitQuestion(c.caps, Revision20260728, method, params); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.seq++
	q := &question{key: "q" + strconv.Itoa(c.seq), method: method, params: params, reply: make(chan json.RawMessage, 1)}
	c.mu.Unlock()
	select {
	case c.asks <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-q.reply:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// modernAsker refuses every question of a 2026-07-28 call whose client
// declared neither elicitation nor sampling, naming the capability.
type modernAsker struct{}

func (modernAsker) Ask(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return nil, admitQuestion(askCaps{}, Revision20260728, method, params)
}

// notes forwards a call's notifications to the stream of the request
// waiting on it; set to nil before that request answers, so that nothing
// is written on a response once it is done.
type notes struct {
	mu sync.Mutex
	f  func([]byte)
}

func (n *notes) send(msg []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.f != nil {
		n.f(msg)
	}
}

func (n *notes) set(f func([]byte)) {
	n.mu.Lock()
	n.f = f
	n.mu.Unlock()
}

// taskAsker refuses every question of a tool running as a task: the
// Tasks extension carries no input_required, so its client could never
// answer.
type taskAsker struct{}

func (taskAsker) Ask(_ context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, cannotAsk(capabilityOf(method), "a tool running as a task cannot ask its client (a task carries no input_required); call it without the Tasks extension to be asked")
}

// callAsking runs a tools/call of a modern client that can be asked.
func (b *Bridge) callAsking(ctx context.Context, x *exchange, m *framing.Message, t *registry.Tool, name, version string, args []byte, md metadata.MD, caps askCaps, progressToken json.RawMessage) ([]byte, error) {
	c := &mrtrCall{id: newSessionID(), owner: principalKey(x.principal), tool: name, caps: caps,
		asks: make(chan *question), done: make(chan struct{}), pending: map[string]*question{}}
	// The call outlives its request: its notifications (progress, logs)
	// go to whichever request waits on it (notes).
	dx := *x
	dx.notify, dx.keepAlive = c.notes.send, nil
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	cctx = x.toChain(cctx, md)
	cctx = callctx.WithAsker(cctx, c)
	if framing.ValidID(progressToken) {
		cctx = callctx.WithProgress(cctx, progressReporter(&dx, progressToken))
	}
	if x.notify != nil {
		c.notes.set(x.notify) // before the tool starts: nothing it reports is lost
		defer c.notes.set(nil)
	}
	go func() {
		defer cancel()
		start := time.Now()
		sc, buf, err := b.invoke(cctx, t, name, version, args)
		c.result, c.err = b.outcome(&dx, name, start, sc, err)
		if buf != nil {
			scratch.Put(buf)
		}
		close(c.done)
	}()
	go func() {
		select {
		case <-b.stop:
			cancel()
		case <-c.done:
		}
	}()
	defer b.track(x, m.ID, cancel)()
	return b.await(ctx, c, x)
}

// await answers a request waiting on call c: its result, or the
// questions it asks. The request ending first (the client gone,
// notifications/cancelled) cancels the call.
func (b *Bridge) await(ctx context.Context, c *mrtrCall, x *exchange) ([]byte, error) {
	if x != nil && x.notify != nil {
		c.notes.set(x.notify)
		defer c.notes.set(nil)
	}
	select {
	case q := <-c.asks:
		c.add(q)
		for more := true; more; {
			select {
			case q := <-c.asks:
				c.add(q)
			default:
				more = false
			}
		}
		return b.inputRequired(c)
	case <-c.done:
		c.forget(b)
		return c.result, c.err
	case <-ctx.Done():
		c.cancel()
		c.forget(b)
		return nil, protocolError(status.FromContextError(ctx.Err()).Err())
	}
}

// forget drops c, which no follow-up can answer any more.
func (c *mrtrCall) forget(b *Bridge) {
	b.calls.Delete(c.id)
	c.mu.Lock()
	if c.expiry != nil {
		c.expiry.Stop()
	}
	c.mu.Unlock()
}

func (c *mrtrCall) add(q *question) {
	c.mu.Lock()
	c.pending[q.key] = q
	c.mu.Unlock()
}

// inputRequired renders the input_required result of c's open questions
// and leaves c waiting for its follow-up, for at most askWait.
func (b *Bridge) inputRequired(c *mrtrCall) ([]byte, error) {
	b.calls.Store(c.id, c)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resuming = false
	if c.expiry == nil {
		c.expiry = time.AfterFunc(askWait, func() {
			c.cancel()
			b.calls.Delete(c.id)
		})
	} else {
		c.expiry.Reset(askWait)
	}
	keys := make([]string, 0, len(c.pending))
	for k := range c.pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type inputRequest struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	reqs := make(map[string]inputRequest, len(keys))
	for _, k := range keys {
		q := c.pending[k]
		reqs[k] = inputRequest{Method: q.method, Params: q.params}
	}
	// resultType first: the result is complete as rendered (no suffix).
	out, err := json.Marshal(struct {
		ResultType    string                  `json:"resultType"`
		InputRequests map[string]inputRequest `json:"inputRequests"`
		RequestState  string                  `json:"requestState"`
		Meta          map[string]any          `json:"_meta"`
	}{resultInputRequired, reqs, b.requestState(c.id), map[string]any{metaServerInfo: json.RawMessage(b.serverInfoJSON())}})
	return out, err
}

// requestState names call id of this replica: the replica by a tag (its
// id hashed: a client learns no host name), the call by its random id.
func (b *Bridge) requestState(id string) string {
	return ownerTag(b.replica) + "." + id
}

// parseRequestState reads what requestState names: the tag of a replica
// and a call id.
func parseRequestState(s string) (replica, id string, ok bool) {
	replica, id, ok = strings.Cut(s, ".")
	if !ok || len(id) != 32 || len(replica) != 24 || strings.ContainsAny(s, " \n") {
		return "", "", false
	}
	return replica, id, true
}

// errStateGone answers a follow-up whose requestState names no call
// waiting for input (to this principal).
var errStateGone = &framing.Error{Code: CodeInvalidParams,
	Message: "invalid params: requestState names no tool call waiting for input: it finished, was cancelled, or waited more than " +
		askWait.String() + " for its answers; call the tool again without requestState",
	Data: map[string]any{"reason": "REQUEST_STATE_UNKNOWN"}}

// resume answers a modern tools/call carrying requestState: the follow-up
// of a call that asked, here or on the replica the state names.
func (b *Bridge) resume(ctx context.Context, x *exchange, m *framing.Message, tool, state string, responses map[string]json.RawMessage) ([]byte, error) {
	if !x.rev.perRequest() {
		return nil, framing.InvalidParams("invalid params: requestState and inputResponses are part of MCP revision " + Revision20260728 + " only")
	}
	replica, id, ok := parseRequestState(state)
	if !ok {
		return nil, framing.InvalidParams("invalid params: requestState is not one toolsvc issued; echo it exactly as the input_required result gave it")
	}
	owner := principalKey(x.principal)
	if replica == ownerTag(b.replica) {
		return b.resumeLocal(ctx, x, m, id, ownerTag(owner), tool, responses)
	}
	return b.relayResume(ctx, replica, id, ownerTag(owner), tool, responses)
}

// resumeLocal gives call id of this replica the answers of a follow-up
// and waits as await does. x and m are nil for a follow-up forwarded by
// another replica (its notifications are not forwarded).
func (b *Bridge) resumeLocal(ctx context.Context, x *exchange, m *framing.Message, id, tag, tool string, responses map[string]json.RawMessage) ([]byte, error) {
	v, ok := b.calls.Load(id)
	if !ok || ownerTag(v.(*mrtrCall).owner) != tag {
		return nil, errStateGone
	}
	c := v.(*mrtrCall)
	if c.tool != tool {
		return nil, framing.InvalidParams(fmt.Sprintf("invalid params: requestState belongs to a call of %q, not %q", c.tool, tool))
	}
	c.mu.Lock()
	if c.resuming {
		c.mu.Unlock()
		return nil, framing.InvalidParams("invalid params: another request is answering this requestState already")
	}
	c.resuming = true
	if c.expiry != nil {
		c.expiry.Stop()
	}
	if x != nil && x.notify != nil {
		// The tool goes on as soon as it has its answer: what it reports
		// from then on is this request's.
		c.notes.set(x.notify)
		defer c.notes.set(nil)
	}
	for key, raw := range responses {
		if q := c.pending[key]; q != nil {
			q.reply <- raw
			delete(c.pending, key)
		}
	}
	open := len(c.pending) > 0
	c.mu.Unlock()
	if open {
		// Questions left unanswered are asked again.
		return b.inputRequired(c)
	}
	if x != nil {
		defer b.track(x, m.ID, c.cancel)()
	}
	return b.await(ctx, c, x)
}

// relayed is what a forwarded follow-up's replica answered.
type relayed struct {
	kind string
	body []byte
}

// resumeRequest is a follow-up forwarded on the fleet's bus.
type resumeRequest struct {
	Owner     string                     `json:"owner"`
	Tool      string                     `json:"tool"`
	Responses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// relayResume forwards a follow-up to the replica running its call and
// answers what that replica answers.
func (b *Bridge) relayResume(ctx context.Context, replica, id, tag, tool string, responses map[string]json.RawMessage) ([]byte, error) {
	if b.cfg.Fanout == nil {
		return nil, errStateGone
	}
	rid := newSessionID()
	ch := make(chan relayed, 2)
	b.relays.Store(rid, ch)
	defer b.relays.Delete(rid)
	body, err := json.Marshal(resumeRequest{Owner: tag, Tool: tool, Responses: responses})
	if err != nil {
		return nil, err
	}
	b.publish(fanResume + " " + replica + " " + b.replica + " " + rid + " " + id + " " + string(body))
	ack := time.NewTimer(relayAck)
	defer ack.Stop()
	for {
		select {
		case r := <-ch:
			switch r.kind {
			case "ack":
				ack.Stop()
				continue
			case "result":
				return r.body, nil
			default:
				var re framing.Error
				if json.Unmarshal(r.body, &re) != nil {
					return nil, errStateGone
				}
				return nil, &re
			}
		case <-ack.C:
			// The replica named is gone (or the bus lost the message):
			// its call cannot be answered from here.
			return nil, errStateGone
		case <-ctx.Done():
			return nil, protocolError(status.FromContextError(ctx.Err()).Err())
		}
	}
}

// heardResume answers a follow-up another replica forwarded, when its
// call runs here.
func (b *Bridge) heardResume(rest string) {
	f := strings.SplitN(rest, " ", 5)
	if len(f) != 5 || f[0] != ownerTag(b.replica) {
		return
	}
	from, rid, id := f[1], f[2], f[3]
	var req resumeRequest
	if json.Unmarshal([]byte(f[4]), &req) != nil {
		return
	}
	answer := func(kind string, body []byte) {
		b.publish(fanResumed + " " + from + " " + rid + " " + kind + " " + string(body))
	}
	go func() {
		if _, ok := b.calls.Load(id); ok {
			answer("ack", []byte("{}"))
		}
		ctx, cancel := context.WithTimeout(context.Background(), askWait)
		defer cancel()
		go func() {
			select {
			case <-b.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		result, err := b.resumeLocal(ctx, nil, nil, id, req.Owner, req.Tool, req.Responses)
		if err == nil {
			answer("result", result)
			return
		}
		var re *framing.Error
		if !errors.As(err, &re) {
			re = &framing.Error{Code: CodeInternalError, Message: "internal error"}
		}
		body, _ := json.Marshal(re)
		answer("error", body)
	}()
}

// heardResumed takes the answer to a follow-up this replica forwarded.
func (b *Bridge) heardResumed(rest string) {
	f := strings.SplitN(rest, " ", 4)
	if len(f) != 4 || f[0] != b.replica {
		return
	}
	if v, ok := b.relays.Load(f[1]); ok {
		select {
		case v.(chan relayed) <- relayed{kind: f[2], body: []byte(f[3])}:
		default:
		}
	}
}
