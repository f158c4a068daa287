package callctx

import "context"

// HasProgress reports whether the call has a progress reporter: a tool
// that relays another server's progress asks for it only then (an MCP
// upstream is sent a progressToken only when someone listens).
func HasProgress(ctx context.Context) bool {
	f, ok := ctx.Value(progressKey{}).(ProgressFunc)
	return ok && f != nil
}

// CanAsk reports whether an Asker is attached: a tool that relays another
// server's questions declares that it can be asked only then.
func CanAsk(ctx context.Context) bool {
	a, ok := ctx.Value(askKey{}).(Asker)
	return ok && a != nil
}
