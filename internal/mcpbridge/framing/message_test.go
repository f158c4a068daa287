package framing

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
)

// TestStrictKeyErrors checks the wording of refusals: the key quoted so
// that folding characters and NUL are visible.
func TestStrictKeyErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"paramſ":{}}`, `key not spelled exactly "params": "param\u017f"`},
		{`{"params":{"name\u0000":1}}`, `key with a control character "name\x00"`},
		{`{"id":1,"id":2}`, `duplicate key "id"`},
	} {
		_, re := Parse([]byte(tc.body))
		if re == nil || re.Code != CodeInvalidRequest || !strings.HasSuffix(re.Message, tc.want) {
			t.Errorf("%s: %+v, want %q", tc.body, re, tc.want)
		}
	}
	var se *jsonrpc.SyntaxError
	if _, err := jsonrpc.Read([]byte(`{"a":tru}`), jsonrpc.Request); !errors.As(err, &se) {
		t.Errorf("bad literal: %v", err)
	}
}

// TestStrictReadsEscapedAndNonASCIIValues: an envelope value with escapes
// or non-ASCII reads as encoding/json reads it (it once read as ""), and a
// value that is not UTF-8 is refused, not repaired.
func TestStrictReadsEscapedAndNonASCIIValues(t *testing.T) {
	m, re := Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"caf\u00e9"}}`))
	if re != nil || m.Method != "tools/call" {
		t.Fatalf("escaped method: %+v %v, want tools/call", m, re)
	}
	if _, re := Parse([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\x83call\"}")); re == nil || re.Code != CodeInvalidRequest {
		t.Fatalf("method that is not UTF-8: %v, want %d", re, CodeInvalidRequest)
	}
}
