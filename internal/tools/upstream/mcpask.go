package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// What an upstream MCP server sends back during a call, relayed to the
// client that made it:
//   - its questions: elicitation/create (for the user, form or URL mode)
//     and sampling/createMessage (for the client's model). A 2025 server
//     sends them as requests of its own (on stdio between the lines of
//     the answer, over HTTP on the call's event stream or the GET stream);
//     a 2026 server answers the call with an input_required result listing
//     them, and the call is sent again with the answers and the server's
//     requestState (SEP-2322). Either way each question goes unchanged to
//     callctx.Ask, and its answer unchanged to the server; toolsvc never
//     answers one itself. When the client cannot be asked, a 2025 server
//     gets a JSON-RPC error and a 2026 call fails, naming what the client
//     lacks.
//   - its progress, for a call whose caller listens (the request carried a
//     progressToken): notifications/progress goes to callctx.Progress.
// The call's cancellation goes the other way (request, cancelled).

const (
	methodElicit = "elicitation/create"
	methodSample = "sampling/createMessage"
	// maxInputRounds bounds the input_required rounds of one request.
	maxInputRounds = 10
)

// inflight is a request in flight: its context (the call's facts, its
// Asker and progress reporter) and the failure of a question it relayed.
type inflight struct {
	ctx context.Context
	// asks: the request is a caller's (tools/call, prompts/get,
	// resources/read), during which a server may ask its client; toolsvc's
	// own requests (listings, ping, discovery) ask no one.
	asks   bool
	mu     sync.Mutex
	askErr error
}

func (f *inflight) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.askErr == nil {
		f.askErr = err
	}
}

// failure is why a question of the server during this request could not
// be put to the client, if one could not.
func (f *inflight) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.askErr
}

func (c *mcpClient) track(id int64, token string, f *inflight) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	c.calls[id] = f
	if token != "" {
		c.tokens[token] = f
	}
}

func (c *mcpClient) untrack(id int64, token string) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	delete(c.calls, id)
	if token != "" {
		delete(c.tokens, token)
	}
}

// notification hears a server's notification: progress goes to the call
// that asked for it, anything else to the upstream (list_changed).
func (c *mcpClient) notification(m *jsonrpc.Message) {
	if m.Method == notificationListening {
		c.listening()
		return
	}
	if m.Method == "notifications/progress" {
		c.fmu.Lock()
		f := c.tokens[string(jsonrpc.Member(m.Params, "progressToken"))]
		c.fmu.Unlock()
		if f == nil {
			return // a call that ended, or a token toolsvc never sent
		}
		var done, total float64
		var message string
		jsonrpc.Members(m.Params, func(key, v []byte) {
			switch string(key) {
			case "progress":
				_ = json.Unmarshal(v, &done)
			case "total":
				_ = json.Unmarshal(v, &total)
			case "message":
				message, _ = jsonrpc.StringValue(v)
			}
		})
		callctx.Progress(f.ctx, done, total, message)
		return
	}
	if m.Method == "notifications/elicitation/complete" {
		id, _ := jsonrpc.StringValue(jsonrpc.Member(m.Params, "elicitationId"))
		c.fmu.Lock()
		to := c.elicited[id]
		delete(c.elicited, id)
		c.fmu.Unlock()
		if to != nil {
			to.ElicitationComplete(id)
		}
		return
	}
	if c.onNotify != nil {
		c.onNotify(m.Method)
	}
}

// maxElicited bounds the URL-mode elicitations remembered for their
// completion: beyond it one is forgotten (its completion is not relayed).
const maxElicited = 256

// elicitedURL remembers whom a 2025 server's URL-mode elicitation was put
// to, so that its notifications/elicitation/complete reaches that client.
func (c *mcpClient) elicitedURL(ctx context.Context, params json.RawMessage) {
	mode, _ := jsonrpc.StringValue(jsonrpc.Member(params, "mode"))
	id, _ := jsonrpc.StringValue(jsonrpc.Member(params, "elicitationId"))
	to, ok := callctx.AskerOf(ctx).(callctx.ElicitationCompleter)
	if mode != "url" || id == "" || !ok {
		return
	}
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if len(c.elicited) >= maxElicited {
		for k := range c.elicited {
			delete(c.elicited, k)
			break
		}
	}
	c.elicited[id] = to
}

// serverRequest answers a 2025 server's request: a question is put to the
// client of the call it belongs to and its answer returned unchanged;
// ping is answered; anything else is not a method toolsvc serves.
// related is the request whose event stream carried it (0: unknown, on
// stdio or the GET stream: then it belongs to the only request in flight,
// and when several are, toolsvc cannot tell whose client to ask and
// refuses rather than ask the wrong one).
func (c *mcpClient) serverRequest(m *jsonrpc.Message, related int64) []byte {
	switch m.Method {
	case "ping":
		return reply(m.ID, json.RawMessage(`{}`), nil)
	case methodElicit, methodSample:
	default:
		return reply(m.ID, nil, &jsonrpc.Error{Code: rpcMethodNotFound, Message: "method not found: toolsvc does not answer " + m.Method})
	}
	f := c.caller(related)
	if f == nil {
		return reply(m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "toolsvc cannot tell which call asks (" + m.Method + "): no call, or several, are in flight and the request came outside a call's stream"})
	}
	res, err := callctx.Ask(f.ctx, m.Method, m.Params)
	if err != nil {
		ae := &askError{method: m.Method, err: err}
		f.fail(ae)
		code := jsonrpc.CodeInternalError
		if errors.Is(err, callctx.ErrCannotAsk) {
			code = rpcMethodNotFound
		}
		return reply(m.ID, nil, &jsonrpc.Error{Code: code, Message: ae.Error()})
	}
	if m.Method == methodElicit {
		c.elicitedURL(f.ctx, m.Params)
	}
	return reply(m.ID, res, nil)
}

// caller is the request a server's question belongs to.
func (c *mcpClient) caller(related int64) *inflight {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if related != 0 {
		return c.calls[related]
	}
	// Only a caller's request can be asked about: toolsvc's own requests
	// beside it (a listing read again after list_changed, a ping) make no
	// call ambiguous.
	var only *inflight
	for _, f := range c.calls {
		if !f.asks {
			continue
		}
		if only != nil {
			return nil
		}
		only = f
	}
	return only
}

// reply is the JSON-RPC response to request id.
func reply(id json.RawMessage, result json.RawMessage, re *jsonrpc.Error) []byte {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if re != nil {
		msg["error"] = re
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	return b
}

// askError is a server's question that could not be put to the client
// (mapMCPError names it to the caller).
type askError struct {
	method string
	err    error
}

func (e *askError) Error() string {
	if errors.Is(e.err, callctx.ErrCannotAsk) {
		return "the server asked the client (" + e.method + "), and the client that made this call cannot be asked a question"
	}
	why := e.err.Error()
	if te := (*toolerr.Error)(nil); errors.As(e.err, &te) {
		why = te.Message
	}
	return "the server asked the client (" + e.method + "), and the question could not be put: " + why
}

func (e *askError) Unwrap() error { return e.err }

// exchange sends one request in the revision spoken; a 2026 server's
// input_required result is answered (each question put to the client by
// callctx.Ask) and the request sent again with the answers and the
// server's requestState, until the server answers.
func (c *mcpClient) exchange(ctx context.Context, method string, params map[string]any, hdr http.Header) (json.RawMessage, error) {
	rev := c.revision()
	for round := 0; ; round++ {
		res, err := c.request(ctx, method, params, hdr, rev)
		if err != nil || rev != Revision2026 {
			return res, err
		}
		if _, isInput := jsonrpc.StringEquals(jsonrpc.Member(res, "resultType"), "input_required"); !isInput {
			return res, nil
		}
		if round+1 == maxInputRounds {
			return nil, fmt.Errorf("%w: the server asked for input %d times for one request", errMalformedMessage, maxInputRounds)
		}
		answers, err := answerInputs(ctx, jsonrpc.Member(res, "inputRequests"))
		if err != nil {
			return nil, err
		}
		params = maps.Clone(params)
		params["inputResponses"] = answers
		delete(params, "requestState")
		if state, ok := jsonrpc.StringValue(jsonrpc.Member(res, "requestState")); ok && state != "" {
			params["requestState"] = state
		}
	}
}

// answerInputs puts each of an input_required result's questions to the
// client, in turn, and returns the answers by the server's ids.
func answerInputs(ctx context.Context, requests json.RawMessage) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	var failed error
	isObject := jsonrpc.Members(requests, func(key, v []byte) {
		if failed != nil {
			return
		}
		id := string(key)
		var method string
		var params json.RawMessage
		jsonrpc.Members(v, func(k, v []byte) {
			switch string(k) {
			case "method":
				method, _ = jsonrpc.StringValue(v)
			case "params":
				params = json.RawMessage(v)
			}
		})
		if method != methodElicit && method != methodSample {
			failed = fmt.Errorf("%w: input request %s asks %s, which toolsvc does not relay", errMalformedMessage, strconv.Quote(id), strconv.Quote(method))
			return
		}
		res, err := callctx.Ask(ctx, method, params)
		if err != nil {
			failed = &askError{method: method, err: err}
			return
		}
		out[id] = res
	})
	switch {
	case failed != nil:
		return nil, failed
	case !isObject:
		return nil, fmt.Errorf("%w: an input_required result without inputRequests", errMalformedMessage)
	}
	return out, nil
}

// answerWait bounds how long one question of the server waits for the
// client's answer: that time does not count against the upstream's
// timeout, which bounds the server's own work.
const answerWait = callctx.AnswerWait

// errNoAnswer is the cause of a call ended because the client did not
// answer the server's question within answerWait.
var errNoAnswer = callctx.ErrNoAnswer

// withCallClock is ctx bounded by timeout of the upstream's time, stopped
// while the client answers a question of the server.
func withCallClock(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return callctx.WithDeadlineBetweenQuestions(ctx, timeout)
}
