package mcpbridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/toolsvc/toolsvc/internal/lib/jsonrpc"
)

// JSON-RPC 2.0 error codes the bridge answers with. Tool failures are never
// JSON-RPC errors: they are tool results with isError set.
const (
	CodeParseError     = jsonrpc.CodeParseError
	CodeInvalidRequest = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound = jsonrpc.CodeMethodNotFound
	CodeInvalidParams  = jsonrpc.CodeInvalidParams
	CodeInternalError  = jsonrpc.CodeInternalError
	// CodeUnauthorized answers a request over stdio whose credentials the
	// server refuses (over HTTP that is a 401 instead).
	CodeUnauthorized = -32001
	// CodeResourceNotFound is the MCP code for resources/read of a missing
	// resource.
	CodeResourceNotFound = -32002
)

// message is any JSON-RPC message, as the strict core reads it in both
// directions (internal/lib/jsonrpc).
type message = jsonrpc.Message

// parseMessage reads one JSON-RPC message strictly (internal/lib/jsonrpc,
// jsonrpc.Request). The error is a parse error (not JSON) or an invalid
// request: a key that is duplicated or not spelled exactly, bytes that are
// not UTF-8, or an envelope member of the wrong type. Nothing of a refused
// message is run.
func parseMessage(data []byte) (message, *rpcError) {
	m, err := jsonrpc.Read(data, jsonrpc.Request)
	if err != nil {
		return message{}, refusal(data, err)
	}
	return m, nil
}

// parseBatch reads a JSON-RPC batch strictly; one refused message refuses
// the whole batch, and so does a batch of more than max messages (read
// only as far as its elements' bounds, none of them decoded).
func parseBatch(data []byte, max int) ([]message, *rpcError) {
	elems, err := jsonrpc.ReadBatch(data)
	if err != nil {
		return nil, refusal(data, err)
	}
	if len(elems) > max {
		return nil, batchTooLong(len(elems), max)
	}
	msgs := make([]message, len(elems))
	for i, e := range elems {
		var re *rpcError
		if msgs[i], re = parseMessage(e); re != nil {
			return nil, re
		}
	}
	return msgs, nil
}

// refusal words a reader error about data as JSON-RPC. The reader stops at
// the first fault it meets, so a duplicated or inexact key can come before
// a syntax error further on; JSON-RPC answers input that is not JSON at all
// with a parse error, so that is checked (on this error path only) before
// the key is blamed. Whether input is JSON at all is encoding/json's word
// (json.Valid), so that a parse error means the same as before.
func refusal(data []byte, err error) *rpcError {
	if ae := (*jsonrpc.ArgumentsError)(nil); errors.As(err, &ae) {
		return errInvalidParams(ae.Error())
	}
	if se := (*jsonrpc.SyntaxError)(nil); errors.As(err, &se) {
		if !json.Valid(data) {
			return &rpcError{Code: CodeParseError, Message: se.Error()}
		}
		return &rpcError{Code: CodeInvalidRequest, Message: "invalid request: " + se.Error()}
	}
	if !json.Valid(data) {
		return &rpcError{Code: CodeParseError, Message: "parse error: the message is not valid JSON"}
	}
	return &rpcError{Code: CodeInvalidRequest, Message: err.Error()}
}

// validID reports whether id is a string or a number (MCP forbids null).
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if id[0] != '0' && id[0] != '-' && len(id) < 16 && allDigits(id) {
			return true // the usual id: a small integer
		}
		var f float64
		return json.Unmarshal(id, &f) == nil
	}
	return false
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// rpcError is a JSON-RPC error object: the core's one type, which the
// upstream client reads servers' errors into too.
type rpcError = jsonrpc.Error

func errInvalidParams(msg string) *rpcError { return &rpcError{Code: CodeInvalidParams, Message: msg} }

var nullID = json.RawMessage("null")

// response is the answer to one request before it is joined into one
// message: a tools/list page is hundreds of kilobytes of cached bytes,
// written around rather than copied. The zero response is "no answer" (a
// notification).
type response struct {
	id json.RawMessage
	// result is the raw JSON result of a success; msg a complete message
	// (an error) otherwise.
	result []byte
	msg    []byte
	// suffix, if not nil, replaces the closing brace of result: the
	// fields a modern result adds to shared, cached bytes (a tools/list
	// page) without copying them.
	suffix []byte
	// code is the JSON-RPC error code of an error response.
	code int
}

const resultHead, resultTail = `{"jsonrpc":"2.0","id":`, `,"result":`

func errorResponse(id json.RawMessage, e *rpcError) response {
	return response{msg: encodeError(id, e), code: e.Code}
}

// pieces are the two parts of a success's result: the result up to its
// closing brace, and what closes it.
func (r response) pieces() (body, end []byte) {
	if r.suffix == nil || len(r.result) == 0 {
		return r.result, nil
	}
	return r.result[:len(r.result)-1], r.suffix
}

// empty reports whether there is nothing to send.
func (r response) empty() bool { return r.result == nil && r.msg == nil }

// size is the length of the encoded message.
func (r response) size() int {
	if r.result == nil {
		return len(r.msg)
	}
	body, end := r.pieces()
	return len(resultHead) + len(r.id) + len(resultTail) + len(body) + len(end) + 1
}

// bytes encodes the message in one buffer; nil for the empty response.
func (r response) bytes() []byte {
	if r.result == nil {
		return r.msg
	}
	return encodeResult(r.id, r.result, r.suffix)
}

// writeTo writes the message to w, a buffered writer (an HTTP response):
// the result goes out as it is, between the pieces of its envelope, never
// copied into one message (a tools/list page is a megabyte of cached
// bytes).
func (r response) writeTo(w io.Writer) error {
	if r.result == nil {
		_, err := w.Write(r.msg)
		return err
	}
	if _, err := io.WriteString(w, resultHead); err != nil {
		return err
	}
	if _, err := w.Write(r.id); err != nil {
		return err
	}
	if _, err := io.WriteString(w, resultTail); err != nil {
		return err
	}
	body, end := r.pieces()
	if _, err := w.Write(body); err != nil {
		return err
	}
	if _, err := w.Write(end); err != nil {
		return err
	}
	_, err := io.WriteString(w, "}")
	return err
}

// writeLine writes the message and a newline to w, which may be
// unbuffered (stdio): one write, but for a large result, which goes out
// as writeTo sends it.
func (r response) writeLine(w io.Writer) error {
	if len(r.result) >= largeResult {
		if err := r.writeTo(w); err != nil {
			return err
		}
		_, err := io.WriteString(w, "\n")
		return err
	}
	var msg []byte
	if r.result != nil {
		msg = append(encodeResult(r.id, r.result, r.suffix), '\n')
	} else {
		// A copy: r.msg may be shared (a notification sent to every client).
		msg = make([]byte, 0, len(r.msg)+1)
		msg = append(append(msg, r.msg...), '\n')
	}
	_, err := w.Write(msg)
	return err
}

// largeResult is the size from which writeLine does not copy a result
// into its message.
const largeResult = 32 << 10

// encodeResult renders a success response around result (raw JSON); a
// suffix, if any, replaces result's closing brace.
func encodeResult(id json.RawMessage, result, suffix []byte) []byte {
	b := make([]byte, 0, len(result)+len(suffix)+len(id)+40)
	b = append(b, resultHead...)
	b = append(b, id...)
	b = append(b, resultTail...)
	if suffix != nil && len(result) > 0 {
		b = append(b, result[:len(result)-1]...)
		b = append(b, suffix...)
	} else {
		b = append(b, result...)
	}
	return append(b, '}')
}

// encodeError renders an error response.
func encodeError(id json.RawMessage, e *rpcError) []byte {
	if len(id) == 0 {
		id = nullID
	}
	eb, err := json.Marshal(e)
	if err != nil {
		eb = []byte(`{"code":-32603,"message":"internal error"}`)
	}
	b := make([]byte, 0, len(eb)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":`...)
	b = append(b, eb...)
	return append(b, '}')
}

// encodeNotification renders a notification with params (any JSON value).
func encodeNotification(method string, params any) []byte {
	pb, err := json.Marshal(params)
	if err != nil {
		return nil
	}
	b := make([]byte, 0, len(pb)+len(method)+40)
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = strconv.AppendQuote(b, method) // method names are ASCII
	b = append(b, `,"params":`...)
	b = append(b, pb...)
	return append(b, '}')
}

// isArray reports whether a JSON body is a batch.
func isArray(body []byte) bool {
	body = bytes.TrimLeft(body, " \t\r\n")
	return len(body) > 0 && body[0] == '['
}
