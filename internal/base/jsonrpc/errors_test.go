package jsonrpc_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
)

func TestReadError(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *jsonrpc.Error
		bad      bool
	}{
		{"result", `{"jsonrpc":"2.0","id":1,"result":{}}`, nil, false},
		{"null error", `{"jsonrpc":"2.0","id":1,"error":null}`, nil, false},
		{"error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`, &jsonrpc.Error{Code: -32602, Message: "bad"}, false},
		{"error with data", `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"m","data":{"a":1}}}`,
			&jsonrpc.Error{Code: -32001, Message: "m", Data: map[string]any{"a": float64(1)}}, false},
		{"string code", `{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`, nil, true},
		{"not an object", `{"jsonrpc":"2.0","id":1,"error":"boom"}`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := jsonrpc.Read([]byte(tc.in), jsonrpc.Answer)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			got, err := m.ReadError()
			if (err != nil) != tc.bad {
				t.Fatalf("ReadError error = %v, want error %v", err, tc.bad)
			}
			if gb, _ := json.Marshal(got); string(gb) != mustJSON(t, tc.want) {
				t.Errorf("ReadError = %s, want %s", gb, mustJSON(t, tc.want))
			}
		})
	}
}

func TestErrorIsAnError(t *testing.T) {
	var err error = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: x"}
	var re *jsonrpc.Error
	if !errors.As(err, &re) || re.Code != -32601 {
		t.Fatalf("errors.As lost the code: %v", err)
	}
	if got, want := err.Error(), "JSON-RPC error -32601: method not found: x"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	b, _ := json.Marshal(err)
	if string(b) != `{"code":-32601,"message":"method not found: x"}` {
		t.Errorf("marshalled as %s", b)
	}
}

func mustJSON(t *testing.T, v *jsonrpc.Error) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
