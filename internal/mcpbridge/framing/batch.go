package framing

import (
	"io"
	"strconv"
)

// The bounds of a JSON-RPC batch (revision 2025-03-26 only) and why these
// figures: mcpbridge/batch.go. Here are their errors and the writers of a
// batch's answer.

// CodeBatchAnswerFull answers each request of a batch left unrun because
// the batch's answer reached BatchMaxAnswerBytes (go-ethereum's code for
// its "response too large").
const CodeBatchAnswerFull = -32003

// Reasons in the data of the batch errors.
const (
	reasonBatchTooLong    = "BATCH_TOO_LONG"
	reasonBatchAnswerFull = "BATCH_ANSWER_FULL"
)

// BatchTooLong refuses a batch of n messages, over max.
func BatchTooLong(n, max int) *Error {
	return &Error{
		Code: CodeInvalidRequest,
		Message: "invalid request: a batch holds at most " + strconv.Itoa(max) + " messages (--mcp-batch-max-messages), this one " +
			strconv.Itoa(n) + ": nothing of it was run; send fewer at a time",
		Data: map[string]any{"reason": reasonBatchTooLong, "maxMessages": max, "messages": n},
	}
}

// BatchAnswerFull answers a request left unrun once the batch's answer
// reached max bytes.
func BatchAnswerFull(max int) *Error {
	return &Error{
		Code: CodeBatchAnswerFull,
		Message: "batch answer full: the answers before this request reached " + strconv.Itoa(max) +
			" bytes (--mcp-batch-max-answer-bytes), so it was not run; send it again",
		Data: map[string]any{"reason": reasonBatchAnswerFull, "maxAnswerBytes": max, "retryable": true},
	}
}

// BatchSize is the length of the JSON array of resps.
func BatchSize(resps [][]byte) int {
	n := 1
	for _, r := range resps {
		n += len(r) + 1
	}
	return n
}

// WriteBatch writes resps as one JSON array to w, a buffered writer (an
// HTTP response): each answer as it is, never joined into a copy.
func WriteBatch(w io.Writer, resps [][]byte) error {
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

// JoinBatch renders resps as one JSON array in one buffer of its size (a
// stdio answer is one line).
func JoinBatch(resps [][]byte) []byte {
	out := make([]byte, 0, BatchSize(resps))
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
