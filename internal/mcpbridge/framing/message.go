// Package framing is the MCP transport's messages on the wire: the
// JSON-RPC error codes it answers with, the strict reading of a message or
// a batch (the core is internal/base/jsonrpc, which the upstream MCP client
// reads with too), the Response a request is answered with and its
// writers (whole, to a buffered writer, as a stdio line), the batch
// writers and bounds, and the one JSON string writer (AppendJSONString).
// It knows no revision, session or transport: Streamable HTTP
// (mcpbridge/streamhttp), stdio and the method dispatch (mcpbridge) all
// frame their messages here.
package framing

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
)

// JSON-RPC 2.0 error codes the MCP server answers with. Tool failures are never
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

// Message is any JSON-RPC message, as the strict core reads it in both
// directions (internal/base/jsonrpc).
type Message = jsonrpc.Message

// Parse reads one JSON-RPC message strictly (internal/base/jsonrpc,
// jsonrpc.Request). The error is a parse error (not JSON) or an invalid
// request: a key that is duplicated or not spelled exactly, bytes that are
// not UTF-8, or an envelope member of the wrong type. Nothing of a refused
// message is run.
func Parse(data []byte) (Message, *Error) {
	m, err := jsonrpc.Read(data, jsonrpc.Request)
	if err != nil {
		return Message{}, refusal(data, err)
	}
	return m, nil
}

// ParseBatch reads a JSON-RPC batch strictly; one refused message refuses
// the whole batch, and so does a batch of more than max messages (read
// only as far as its elements' bounds, none of them decoded).
func ParseBatch(data []byte, max int) ([]Message, *Error) {
	elems, err := jsonrpc.ReadBatch(data)
	if err != nil {
		return nil, refusal(data, err)
	}
	if len(elems) > max {
		return nil, BatchTooLong(len(elems), max)
	}
	msgs := make([]Message, len(elems))
	for i, e := range elems {
		var re *Error
		if msgs[i], re = Parse(e); re != nil {
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
func refusal(data []byte, err error) *Error {
	if ae := (*jsonrpc.ArgumentsError)(nil); errors.As(err, &ae) {
		return InvalidParams(ae.Error())
	}
	if se := (*jsonrpc.SyntaxError)(nil); errors.As(err, &se) {
		if !json.Valid(data) {
			return &Error{Code: CodeParseError, Message: se.Error()}
		}
		return &Error{Code: CodeInvalidRequest, Message: "invalid request: " + se.Error()}
	}
	if !json.Valid(data) {
		return &Error{Code: CodeParseError, Message: "parse error: the message is not valid JSON"}
	}
	return &Error{Code: CodeInvalidRequest, Message: err.Error()}
}

// ValidID reports whether id is a string or a number (MCP forbids null).
func ValidID(id json.RawMessage) bool {
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

// Error is a JSON-RPC error object: the core's one type, which the
// upstream client reads servers' errors into too.
type Error = jsonrpc.Error

// InvalidParams is the Invalid Params error with msg.
func InvalidParams(msg string) *Error { return &Error{Code: CodeInvalidParams, Message: msg} }

// NullID is the id of an answer to a message whose id cannot be read.
var NullID = json.RawMessage("null")

// IDOrNull is id if it is valid, NullID otherwise.
func IDOrNull(id json.RawMessage) json.RawMessage {
	if ValidID(id) {
		return id
	}
	return NullID
}

// Response is the answer to one request before it is joined into one
// message: a tools/list page is hundreds of kilobytes of cached bytes,
// written around rather than copied. The zero response is "no answer" (a
// notification).
type Response struct {
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

// ErrorResponse is the answer e to the request id.
func ErrorResponse(id json.RawMessage, e *Error) Response {
	return Response{msg: EncodeError(id, e), code: e.Code}
}

// Result is the success answer result (raw JSON) to the request id;
// suffix, if not nil, replaces result's closing brace.
func Result(id json.RawMessage, result, suffix []byte) Response {
	return Response{id: id, result: result, suffix: suffix}
}

// Raw is the answer msg, a complete message.
func Raw(msg []byte) Response { return Response{msg: msg} }

// Code is the JSON-RPC error code of an error answer, 0 for a result.
func (r Response) Code() int { return r.code }

// pieces are the two parts of a success's result: the result up to its
// closing brace, and what closes it.
func (r Response) pieces() (body, end []byte) {
	if r.suffix == nil || len(r.result) == 0 {
		return r.result, nil
	}
	return r.result[:len(r.result)-1], r.suffix
}

// Empty reports whether there is nothing to send.
func (r Response) Empty() bool { return r.result == nil && r.msg == nil }

// Size is the length of the encoded message.
func (r Response) Size() int {
	if r.result == nil {
		return len(r.msg)
	}
	body, end := r.pieces()
	return len(resultHead) + len(r.id) + len(resultTail) + len(body) + len(end) + 1
}

// Bytes encodes the message in one buffer; nil for the empty response.
func (r Response) Bytes() []byte {
	if r.result == nil {
		return r.msg
	}
	return EncodeResult(r.id, r.result, r.suffix)
}

// Send writes the message to w, a buffered writer (an HTTP response):
// the result goes out as it is, between the pieces of its envelope, never
// copied into one message (a tools/list page is a megabyte of cached
// bytes).
func (r Response) Send(w io.Writer) error {
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

// WriteLine writes the message and a newline to w, which may be
// unbuffered (stdio): one write, but for a large result, which goes out
// as Send sends it.
func (r Response) WriteLine(w io.Writer) error {
	if len(r.result) >= largeResult {
		if err := r.Send(w); err != nil {
			return err
		}
		_, err := io.WriteString(w, "\n")
		return err
	}
	var msg []byte
	if r.result != nil {
		msg = append(EncodeResult(r.id, r.result, r.suffix), '\n')
	} else {
		// A copy: r.msg may be shared (a notification sent to every client).
		msg = make([]byte, 0, len(r.msg)+1)
		msg = append(append(msg, r.msg...), '\n')
	}
	_, err := w.Write(msg)
	return err
}

// largeResult is the size from which WriteLine does not copy a result
// into its message.
const largeResult = 32 << 10

// EncodeResult renders a success response around result (raw JSON); a
// suffix, if any, replaces result's closing brace.
func EncodeResult(id json.RawMessage, result, suffix []byte) []byte {
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

// EncodeError renders an error response.
func EncodeError(id json.RawMessage, e *Error) []byte {
	if len(id) == 0 {
		id = NullID
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

// EncodeNotification renders a notification with params (any JSON value).
func EncodeNotification(method string, params any) []byte {
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

// IsArray reports whether a JSON body is a batch.
func IsArray(body []byte) bool {
	body = bytes.TrimLeft(body, " \t\r\n")
	return len(body) > 0 && body[0] == '['
}
