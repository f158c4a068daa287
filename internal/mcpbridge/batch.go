package mcpbridge

import (
	"context"

	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// JSON-RPC batches (revision 2025-03-26 only) are bounded twice, so that
// one request of the request cap cannot make the server run and hold an
// answer of any size (15,000 tools/call in 1.7 MB built a
// 48–57 MB answer, and the process kept 150 MB more):
//
//   - BatchMaxMessages (default 100) bounds the messages: a longer batch
//     is refused whole, before any of it runs. go-ethereum bounds its
//     batches the same way (1,000 by default) for calls far cheaper than
//     a tool call, each of which here passes the whole chain and is
//     audited; MCP clients that batched at all (the TypeScript SDK of
//     2025-03-26) sent a handful of messages. 100 is the tools/list page
//     size too: one batch does at most what 100 separate requests would.
//   - BatchMaxAnswerBytes (default 8 MiB, twice the request cap) bounds
//     the answer: once the answers so far reach it, the remaining
//     requests are not run and each is answered with CodeBatchAnswerFull,
//     retryable, so the client sends them again (go-ethereum's "response
//     too large" answers the rest of a batch likewise). Five full
//     tools/list pages (1.5 MB each) fit; 100 tool results (a few KB
//     each) never come near it. Refusing the rest rather than streaming
//     it: a stdio answer is one line written under the connection's lock,
//     and a request that is not run has no side effect to report.
//
// The answers are then written one by one, never joined into a copy.

// answerBatch answers the messages of a batch in order, until their
// answers reach BatchMaxAnswerBytes; each request after that is answered
// with batchAnswerFull without being run, and the notifications after it
// are dropped. refuse, when not nil, answers a message without running it
// (stdio's initialize); nil lets it run. The answers are the messages to
// send, none for notifications.
func (b *Bridge) answerBatch(ctx context.Context, x *exchange, msgs []framing.Message, refuse func(*framing.Message) []byte) [][]byte {
	max := b.cfg.BatchMaxAnswerBytes
	var (
		resps [][]byte
		size  int
	)
	for i := range msgs {
		m := &msgs[i]
		var resp []byte
		switch {
		case size >= max:
			if m.IsNotification() || m.IsResponse() {
				continue
			}
			resp = framing.EncodeError(framing.IDOrNull(m.ID), framing.BatchAnswerFull(max))
		case refuse != nil:
			if resp = refuse(m); resp == nil {
				resp = b.handle(ctx, x, m)
			}
		default:
			resp = b.handle(ctx, x, m)
		}
		if resp != nil {
			resps = append(resps, resp)
			size += len(resp) + 1
		}
	}
	return resps
}
