package mcpbridge

import (
	"context"
	"io"
	"strconv"
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

// CodeBatchAnswerFull answers each request of a batch left unrun because
// the batch's answer reached BatchMaxAnswerBytes (go-ethereum's code for
// its "response too large").
const CodeBatchAnswerFull = -32003

// Reasons in the data of the batch errors.
const (
	reasonBatchTooLong    = "BATCH_TOO_LONG"
	reasonBatchAnswerFull = "BATCH_ANSWER_FULL"
)

// batchTooLong refuses a batch of n messages, over max.
func batchTooLong(n, max int) *rpcError {
	return &rpcError{
		Code: CodeInvalidRequest,
		Message: "invalid request: a batch holds at most " + strconv.Itoa(max) + " messages (--mcp-batch-max-messages), this one " +
			strconv.Itoa(n) + ": nothing of it was run; send fewer at a time",
		Data: map[string]any{"reason": reasonBatchTooLong, "maxMessages": max, "messages": n},
	}
}

// batchAnswerFull answers a request left unrun once the batch's answer
// reached max bytes.
func batchAnswerFull(max int) *rpcError {
	return &rpcError{
		Code: CodeBatchAnswerFull,
		Message: "batch answer full: the answers before this request reached " + strconv.Itoa(max) +
			" bytes (--mcp-batch-max-answer-bytes), so it was not run; send it again",
		Data: map[string]any{"reason": reasonBatchAnswerFull, "maxAnswerBytes": max, "retryable": true},
	}
}

// answerBatch answers the messages of a batch in order, until their
// answers reach BatchMaxAnswerBytes; each request after that is answered
// with batchAnswerFull without being run, and the notifications after it
// are dropped. refuse, when not nil, answers a message without running it
// (stdio's initialize); nil lets it run. The answers are the messages to
// send, none for notifications.
func (b *Bridge) answerBatch(ctx context.Context, x *exchange, msgs []message, refuse func(*message) []byte) [][]byte {
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
			resp = encodeError(idOrNull(m.ID), batchAnswerFull(max))
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

// batchSize is the length of the JSON array of resps.
func batchSize(resps [][]byte) int {
	n := 1
	for _, r := range resps {
		n += len(r) + 1
	}
	return n
}

// writeBatch writes resps as one JSON array to w, a buffered writer (an
// HTTP response): each answer as it is, never joined into a copy.
func writeBatch(w io.Writer, resps [][]byte) error {
	for i, r := range resps {
		sep := ","
		if i == 0 {
			sep = "["
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
		if _, err := w.Write(r); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]")
	return err
}

// joinBatch renders resps as one JSON array in one buffer of its size (a
// stdio answer is one line).
func joinBatch(resps [][]byte) []byte {
	out := make([]byte, 0, batchSize(resps))
	for i, r := range resps {
		if i == 0 {
			out = append(out, '[')
		} else {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return append(out, ']')
}
