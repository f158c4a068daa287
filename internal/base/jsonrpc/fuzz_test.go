package jsonrpc

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzRead holds both directions' reading to encoding/json: an accepted
// message is valid JSON and UTF-8, and encoding/json reads its envelope
// exactly as Read returns it (no differential left); ReadBatch's
// elements are the array's.
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"Name":1}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"x","inputSchema":{"properties":{"Type":{}}}}]}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"x"}`, `{"a":"\ud83d\ude00","b":"\ud800x"}`, `[{"id":1},{"id":2}]`,
		`{"id":1,"id":2}`, `{"m\u0065thod":"x"}`, `{`, ``, `1`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, rules := range []*Rules{Request, Answer} {
			m, err := Read(data, rules)
			if err != nil {
				continue
			}
			if !json.Valid(data) || !utf8.Valid(data) {
				t.Fatalf("%q accepted: json.Valid %v, utf8.Valid %v", data, json.Valid(data), utf8.Valid(data))
			}
			var std Message
			if err := json.Unmarshal(data, &std); err != nil {
				t.Fatalf("%q accepted, but encoding/json: %v", data, err)
			}
			if std.Method != m.Method || std.JSONRPC != m.JSONRPC || !bytes.Equal(std.ID, m.ID) ||
				!bytes.Equal(std.Params, m.Params) || !bytes.Equal(std.Result, m.Result) || !bytes.Equal(std.Error, m.Error) {
				t.Fatalf("%q: strict %+v, encoding/json %+v", data, m, std)
			}
		}
		if elems, err := ReadBatch(data); err == nil {
			var std []json.RawMessage
			if err := json.Unmarshal(data, &std); err != nil || len(std) != len(elems) {
				t.Fatalf("%q: batch %q, encoding/json %q %v", data, elems, std, err)
			}
			for i := range std {
				if !bytes.Equal(std[i], elems[i]) {
					t.Fatalf("%q: element %d %s, encoding/json %s", data, i, elems[i], std[i])
				}
			}
		}
	})
}
