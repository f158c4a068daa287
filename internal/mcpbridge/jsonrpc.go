package mcpbridge

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// JSON-RPC 2.0 error codes the bridge answers with. Tool failures are never
// JSON-RPC errors: they are tool results with isError set.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeUnauthorized answers a request over stdio whose credentials the
	// server refuses (over HTTP that is a 401 instead).
	CodeUnauthorized = -32001
	// CodeResourceNotFound is the MCP code for resources/read of a missing
	// resource.
	CodeResourceNotFound = -32002
)

// message is any JSON-RPC message: a request (method and id), a
// notification (method, no id) or a response (result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// isNotification reports whether m expects no response.
func (m *message) isNotification() bool { return len(m.ID) == 0 && m.Method != "" }

// isResponse reports whether m answers a request of ours.
func (m *message) isResponse() bool {
	return m.Method == "" && (len(m.Result) > 0 || len(m.Error) > 0)
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
		var f float64
		return json.Unmarshal(id, &f) == nil
	}
	return false
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error implements error so handlers can return protocol faults.
func (e *rpcError) Error() string { return e.Message }

func errInvalidParams(msg string) *rpcError { return &rpcError{Code: CodeInvalidParams, Message: msg} }

var nullID = json.RawMessage("null")

// encodeResult renders a success response around result (raw JSON).
func encodeResult(id json.RawMessage, result []byte) []byte {
	b := make([]byte, 0, len(result)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
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

// appendJSONString appends s as a JSON string. It is the hot path of every
// tools/call (the text copy of structuredContent), hence hand-written.
func appendJSONString(b []byte, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// isArray reports whether a JSON body is a batch.
func isArray(body []byte) bool {
	body = bytes.TrimLeft(body, " \t\r\n")
	return len(body) > 0 && body[0] == '['
}
