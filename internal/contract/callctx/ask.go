package callctx

import (
	"context"
	"encoding/json"
	"errors"
)

// Asker puts a question from a tool to the client that made the call: an
// MCP "elicitation/create" (a question for the user) or
// "sampling/createMessage" (a request for the client's model). The
// transport that took the call attaches one when its client can be asked;
// an upstream MCP tool calls Ask when its server asks, and relays the
// answer unchanged. params and the answer are the MCP request's params and
// result as JSON.
type Asker interface {
	Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// ElicitationCompleter is an Asker whose client can be told that a
// URL-mode elicitation it was asked has completed (the 2025 revisions'
// notifications/elicitation/complete, relayed from the tool's server):
// the tool remembers the Asker and calls it when it hears so, perhaps
// after the call ended.
type ElicitationCompleter interface {
	ElicitationComplete(elicitationID string)
}

// ErrCannotAsk is returned by Ask when the call's client cannot be asked
// at all (no transport attached an Asker); transports return their own
// error, naming the capability the client did not declare, when it lacks
// only the one asked for.
var ErrCannotAsk = errors.New("the client that made this call cannot be asked a question")

type askKey struct{}

// WithAsker attaches the way to ask the call's client.
func WithAsker(ctx context.Context, a Asker) context.Context {
	return context.WithValue(ctx, askKey{}, a)
}

// AskerOf is the Asker attached to ctx, or nil: a tool that bounds its
// calls' time wraps it to stop its clock while the client answers.
func AskerOf(ctx context.Context) Asker {
	a, _ := ctx.Value(askKey{}).(Asker)
	return a
}

// Ask puts method's question to the call's client and returns its answer,
// or ErrCannotAsk when no Asker is attached.
func Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if a, ok := ctx.Value(askKey{}).(Asker); ok && a != nil {
		return a.Ask(ctx, method, params)
	}
	return nil, ErrCannotAsk
}
