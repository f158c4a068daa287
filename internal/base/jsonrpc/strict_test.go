package jsonrpc

import (
	"errors"
	"strings"
	"testing"
)

// TestReadAnswer: an upstream's answer is read as strictly as a client's
// request: duplicates anywhere, variants of the keys toolsvc reads in
// interpreted objects, and bytes that are not UTF-8 are refused; the
// property names of schemas and structured content are the tool's own.
func TestReadAnswer(t *testing.T) {
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
			_, err := Read([]byte(tt.msg), Answer)
			if (err == nil) != tt.ok {
				t.Fatalf("Read = %v, want ok %v", err, tt.ok)
			}
			if tt.name == "not UTF-8" && !errors.Is(err, ErrNotUTF8) {
				t.Fatalf("err = %v, want ErrNotUTF8", err)
			}
		})
	}
}

// TestReadErrors: the refusals of both directions and their wording
// (jsontext's duplicate and UTF-8 refusals turned into toolsvc's errors;
// toolsvc's own key rule; the grammar).
func TestReadErrors(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		rules *Rules
		want  string // suffix of the error; "" is accepted
	}{
		{`{"id":1,"id":2}`, Request, `invalid request: duplicate key "id"`},
		{`{"params":{"arguments":{"a":1,"\u0061":2}}}`, Request, `invalid request: duplicate key "a"`},
		{`{"params":{"arguments":{"Name":1,"x\u0000":2}}}`, Request, ""},
		{`{"params":{"name\u0000":1}}`, Request, `key with a control character "name\x00"`},
		{`{"params":{"name\u200b":1}}`, Request, `key with a control or format character "name\u200b"`},
		{`{"paramſ":{}}`, Request, `key not spelled exactly "params": "param\u017f"`},
		{`{"result":{"IsError":true}}`, Request, ""},
		{`{"result":{"IsError":true}}`, Answer, `key not spelled exactly "isError": "IsError"`},
		{`{"method":"a\ud800"}`, Request, `the message is not UTF-8`},
		{"{\"method\":\"\xff\"}", Request, `the message is not UTF-8`},
		{`{"method":7}`, Request, `wrong types)`},
		{`[1]`, Request, `not a JSON-RPC message: "not an object"`},
		{`{"a":tru}`, Request, `parse error: `},
		{`{"a":1} x`, Request, `data after the JSON value at offset 8`},
		{``, Request, `parse error: unexpected end of JSON input`},
		{`{"jsonrpc":"2.0","method":"tools\/call","params":{"name":"caf\u00e9"}}`, Request, ""},
	} {
		m, err := Read([]byte(tc.msg), tc.rules)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want accepted", tc.msg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.msg, err, tc.want)
		}
		if tc.want == "" && strings.Contains(tc.msg, "tools") && m.Method != "tools/call" {
			t.Errorf("%s: method %q", tc.msg, m.Method)
		}
	}
	var se *SyntaxError
	if _, err := Read([]byte(`{"a":tru}`), Request); !errors.As(err, &se) {
		t.Errorf("bad literal: %v", err)
	}
}

// TestReadRaw: the raw members alias the message's bytes, as they were
// written (white space around a value is not part of it).
func TestReadRaw(t *testing.T) {
	m, err := Read([]byte(` { "id" : 7 , "params" : { "a" : [ 1 ] } , "jsonrpc":"2.0","method":"x"} `), Request)
	if err != nil || string(m.ID) != "7" || string(m.Params) != `{ "a" : [ 1 ] }` || m.JSONRPC != "2.0" || m.Method != "x" {
		t.Fatalf("%+v %v", m, err)
	}
	elems, err := ReadBatch([]byte(`[ {"id":1} , {"id":2} ]`))
	if err != nil || len(elems) != 2 || string(elems[1]) != `{"id":2}` {
		t.Fatalf("%q %v", elems, err)
	}
	if _, err := ReadBatch([]byte(`[{"id":1,"id":1}]`)); err == nil {
		t.Fatal("a batch with a duplicate accepted")
	}
}

// TestReadAllocations: reading a tools/call allocates nothing but the
// first use of a reader (the hot path of every request).
func TestReadAllocations(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{"a":[1,{"b":"c"}]},"_meta":{"progressToken":"t"}}}`)
	if _, err := Read(msg, Request); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = Read(msg, Request) }); n > 0 {
		t.Errorf("Read allocates %.0f times", n)
	}
	if n := testing.AllocsPerRun(100, func() { Members(msg, func(k, v []byte) {}) }); n > 0 {
		t.Errorf("Members allocates %.0f times", n)
	}
}

func BenchmarkRead(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{"query":"x","limit":5},"_meta":{"progressToken":"t"}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := Read(msg, Request); err != nil {
			b.Fatal(err)
		}
	}
}

// TestArgumentsNotUTF8 : bytes that are not UTF-8 inside a call's
// arguments are the caller's bad argument (ArgumentsError, naming it);
// anywhere else the message itself is refused (ErrNotUTF8).
func TestArgumentsNotUTF8(t *testing.T) {
	tests := []struct {
		in      string
		pointer string // "-" for ErrNotUTF8
	}{
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"q\":\"a\xffb\"}}}", "/q"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"q\xc3(ery\":\"x\"}}}", ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"q":["a","\ud800"]}}}`, "/q/1"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/c\xffall\"}", "-"},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\xff\"}}", "-"},
	}
	for _, tc := range tests {
		_, err := Read([]byte(tc.in), Request)
		var ae *ArgumentsError
		switch {
		case tc.pointer == "-":
			if !errors.Is(err, ErrNotUTF8) {
				t.Errorf("Read(%q) = %v, want ErrNotUTF8", tc.in, err)
			}
		case !errors.As(err, &ae) || ae.Pointer != tc.pointer:
			t.Errorf("Read(%q) = %v, want an ArgumentsError at %q", tc.in, err, tc.pointer)
		}
	}
}
