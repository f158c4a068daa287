package mcpbridge

import (
	"context"
	"io"

	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/stdio"
)

// ServeStdio serves MCP over stdio (internal/mcpbridge/stdio):
// newline-delimited JSON-RPC messages on in, responses and notifications
// on out (nothing else is ever written to out). authorization is the
// authorization header value sent with every call ("" in development
// mode). Requests run concurrently, so notifications/cancelled can end
// one; ServeStdio returns when in ends (after the running requests
// finish) or ctx is done.
func (b *Bridge) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, authorization string) error {
	return stdio.Serve(ctx, in, out, b.cfg.MaxRequestBytes, func(write, queue func([]byte)) stdio.Session {
		p := newPeer("stdio", "")
		// Server-initiated messages (tools/list_changed) are queued for
		// the connection's loop to write.
		p.out = queue
		b.stdio.Store(p, struct{}{})
		return &stdioSession{b: b, peer: p, authorization: authorization, write: write}
	})
}

// stdioSession is the bridge's side of one stdio connection: its peer
// (the 2025 era's session: the client's initialize, log level and
// questions) and its credentials.
type stdioSession struct {
	b             *Bridge
	peer          *peer
	authorization string
	write         func([]byte)
}

// exchange is the context of one message of the connection: the caller
// as the authenticator sees its credentials now.
func (s *stdioSession) exchange(ctx context.Context) *exchange {
	principal, err := s.b.cfg.Auth.Authenticate(ctx, s.authorization)
	if err != nil {
		principal = nil // the chain reports it on calls; listings refuse
	}
	return (&exchange{authorization: s.authorization, md: forwardedValues(s.authorization), peer: s.peer, notify: s.write,
		ask: func(msg []byte) error { s.write(msg); return nil }}).withPrincipal(principal)
}

func (s *stdioSession) Answer(ctx context.Context, m *framing.Message) framing.Response {
	return s.b.answer(ctx, s.exchange(ctx), m)
}

// Batch answers a batch (revision 2025-03-26 only), bounded as batch.go
// says.
func (s *stdioSession) Batch(ctx context.Context, line []byte) []byte {
	b, x := s.b, s.exchange(ctx)
	msgs, re := framing.ParseBatch(line, b.cfg.BatchMaxMessages)
	if re != nil {
		return framing.EncodeError(framing.NullID, re)
	}
	if len(msgs) == 0 {
		return framing.EncodeError(framing.NullID, &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: empty batch"})
	}
	if rev := x.peer.negotiated(); rev != Revision20250326 {
		return framing.EncodeError(framing.NullID, &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: JSON-RPC batches are not supported in MCP revision " + rev})
	}
	x.batch = true
	resps := b.answerBatch(ctx, x, msgs, func(m *framing.Message) []byte {
		if m.Method == "initialize" {
			return framing.EncodeError(framing.IDOrNull(m.ID), &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: initialize cannot be batched"})
		}
		return nil
	})
	if len(resps) == 0 {
		return nil
	}
	return framing.JoinBatch(resps)
}

// Gone ends the client's subscriptions unanswered.
func (s *stdioSession) Gone() { s.b.listeners.endPeer(s.peer) }

func (s *stdioSession) Close() {
	s.peer.end()
	s.b.stdio.Delete(s.peer)
}
