package mcpbridge

import (
	"errors"
	"testing"
)

// TestScanAnswer: an upstream's answer is read as strictly as a client's
// request: duplicates anywhere, variants of the keys toolsvc reads in
// interpreted objects, and bytes that are not UTF-8 are refused; the
// property names of schemas and structured content are the tool's own.
func TestScanAnswer(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		ok   bool
	}{
		{"clean", `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"Name":"w"},"isError":false}}`, true},
		{"schema property names are the tool's", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x","inputSchema":{"properties":{"Type":{},"NAME":{}}}}]}}`, true},
		{"duplicate in structured content", `{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"a":1,"a":2}}}`, false},
		{"duplicate in the envelope", `{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`, false},
		{"case variant of isError", `{"jsonrpc":"2.0","id":1,"result":{"IsError":true}}`, false},
		{"case variant of a tool's name", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"Name":"x"}]}}`, false},
		{"folding variant of tools", `{"jsonrpc":"2.0","id":1,"result":{"tool\u017f":[]}}`, false},
		{"not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"structuredContent\":{\"a\":\"\xff\"}}}", false},
		{"not an object", `[1]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ScanAnswer([]byte(tt.msg))
			if (err == nil) != tt.ok {
				t.Fatalf("ScanAnswer = %v, want ok %v", err, tt.ok)
			}
			if tt.name == "not UTF-8" && !errors.Is(err, ErrAnswerNotUTF8) {
				t.Fatalf("err = %v, want ErrAnswerNotUTF8", err)
			}
		})
	}
}
