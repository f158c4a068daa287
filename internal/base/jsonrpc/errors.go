package jsonrpc

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC 2.0 error codes of the specification.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object, the same type for an error toolsvc
// answers a client with and one it reads from a server it calls. It is an
// error, so handlers return protocol faults as errors.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// ReadError decodes the error member of a message Read returned: nil and
// no error when there is none (or it is null), an error when it is not a
// JSON-RPC error object (its members were checked by Read already).
func (m *Message) ReadError() (*Error, error) {
	if len(m.Error) == 0 {
		return nil, nil
	}
	var e *Error
	if err := json.Unmarshal(m.Error, &e); err != nil {
		return nil, fmt.Errorf("the error member is not a JSON-RPC error object: %w", err)
	}
	return e, nil
}
