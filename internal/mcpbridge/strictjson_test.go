package mcpbridge

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// oracleCheck is an independent reading of the strict rules, on
// encoding/json's tokenizer: it reports whether data is one JSON value
// and, if so, whether some object of it has a duplicated key or (in an
// interpreted object) a key that is not spelled exactly.
func oracleCheck(data []byte) (valid, refused bool) {
	if !json.Valid(data) {
		return false, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func(depth int, opaque bool) bool // reports refusal
	walk = func(depth int, opaque bool) bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('['):
			bad := false
			for dec.More() {
				bad = walk(depth+1, opaque) || bad
			}
			_, _ = dec.Token()
			return bad
		case json.Delim('{'):
			bad := false
			seen := map[string]bool{}
			for dec.More() {
				kt, _ := dec.Token()
				k := kt.(string)
				if seen[k] {
					bad = true
				}
				seen[k] = true
				if !opaque && !jsonrpc.Request.IsExact(k) {
					if strings.ContainsFunc(k, func(r rune) bool {
						return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar
					}) {
						bad = true
					}
					for _, p := range jsonrpc.RequestKeys {
						if strings.EqualFold(k, p) {
							bad = true
						}
					}
				}
				childOpaque := opaque || k == "arguments" || (depth == 0 && (k == "result" || k == "error"))
				bad = walk(depth+1, childOpaque) || bad
			}
			_, _ = dec.Token()
			return bad
		}
		return false
	}
	return true, walk(0, false)
}

// FuzzStrictMessage holds framing.Parse to the oracle: a parse error exactly
// when the input is not JSON, a refusal whenever the oracle finds an
// ambiguous key, and for every accepted message, encoding/json reading
// the envelope and the tools/call params exactly as the strict reader
// does (no differential left).
func FuzzStrictMessage(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","paramſ":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name\u0000":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a","arguments":{"Name":1,"x":[{"a":1}]},"_meta":{"progressToken":"t"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"a","name":"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"a":"\ud83d\ude00","b":"\ud800x"}`, `[1]`, `1e5`, `{"x":-0.5E+3}`, `{`, ``, `"\u0000"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid, ambiguous := oracleCheck(data)
		m, re := framing.Parse(data)
		if re != nil {
			if (re.Code == CodeParseError) == valid {
				t.Fatalf("%q: code %d (%s), json.Valid %v", data, re.Code, re.Message, valid)
			}
			return
		}
		if !valid || ambiguous {
			t.Fatalf("%q accepted: valid %v, ambiguous %v", data, valid, ambiguous)
		}
		var std framing.Message
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("%q accepted, but encoding/json: %v", data, err)
		}
		if std.Method != m.Method || std.JSONRPC != m.JSONRPC || !bytes.Equal(std.ID, m.ID) || !bytes.Equal(std.Params, m.Params) {
			t.Fatalf("%q: strict %+v, encoding/json %+v", data, m, std)
		}
		var p callParams
		if params(m.Params, &p) == nil && len(m.Params) > 0 && m.Params[0] == '{' {
			var exact map[string]json.RawMessage
			_ = json.Unmarshal(m.Params, &exact)
			var name string
			_ = json.Unmarshal(exact["name"], &name)
			if name != p.Name || !bytes.Equal(exact["arguments"], p.Arguments) {
				t.Fatalf("%q: params read as %q/%s, exactly %q/%s", data, p.Name, p.Arguments, name, exact["arguments"])
			}
		}
		checkMembers(t, m.Params)
	})
}

// checkMembers holds members, member and readModern (which walk accepted
// params without decoding them) to encoding/json's reading of the same
// bytes.
func checkMembers(t *testing.T, params []byte) {
	t.Helper()
	var exact map[string]json.RawMessage
	isObject := json.Unmarshal(params, &exact) == nil && exact != nil
	got := map[string]json.RawMessage{}
	if jsonrpc.Members(params, func(k, v []byte) { got[string(k)] = bytes.Clone(v) }) != isObject {
		t.Fatalf("%q: members says object %v, encoding/json %v", params, !isObject, isObject)
	}
	if !isObject {
		return
	}
	if len(got) != len(exact) {
		t.Fatalf("%q: members %q, encoding/json %q", params, got, exact)
	}
	for k, v := range exact {
		if !bytes.Equal(got[k], v) || !bytes.Equal(jsonrpc.Member(params, k), v) {
			t.Fatalf("%q: member %q is %s, encoding/json %s", params, k, got[k], v)
		}
	}
	var std struct {
		Meta *modernMeta `json:"_meta"`
	}
	stdOK := json.Unmarshal(params, &std) == nil && std.Meta != nil && std.Meta.ProtocolVersion != ""
	meta, ok := readModern(params)
	if ok {
		var m struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		_ = json.Unmarshal(params, &m)
		if caps := m.Meta[metaClientCapabilities]; meta.HasCapabilities != (len(caps) > 0 && caps[0] == '{') {
			t.Fatalf("%q: readModern HasCapabilities %v", params, meta.HasCapabilities)
		}
		meta.HasCapabilities = false
	}
	if !ok && stdOK && !utf8.Valid(jsonrpc.Member(params, "_meta")) {
		// readModern refuses a string that is not UTF-8 (jsonrpc.StringValue),
		// where encoding/json repairs it.
		return
	}
	if ok != stdOK || (ok && meta != *std.Meta) {
		t.Fatalf("%q: readModern %+v %v, encoding/json %+v %v", params, meta, ok, std.Meta, stdOK)
	}
}

// TestMembers: values of every type, white space, escaped keys, and
// _meta members of the wrong type (the request is then not modern, as
// encoding/json's failed decoding had it).
func TestMembers(t *testing.T) {
	for _, params := range []string{
		`{}`, ` { "a" : 1 , "b" : [ 1 , { "c" : "}" } ] , "d" : "x\"}" , "e" : null , "f" : true , "g" : -1.5e3 } `,
		`{"n\u0061me":"a","arguments":{"x":{"y":[]}}}`, `[1]`, `"s"`, `null`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"n","version":"v"},"traceparent":"t"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":"n"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":null}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":2026}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/logLevel":1}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":["x"]}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-\u0032\u0038"}}`,
		`{"_meta":"io.modelcontextprotocol/protocolVersion"}`,
		`{"_meta":null,"x":"io.modelcontextprotocol/protocolVersion"}`,
	} {
		if _, err := jsonrpc.Read([]byte(`{"params":`+params+`}`), jsonrpc.Request); err != nil {
			t.Fatalf("%s: %v", params, err)
		}
		checkMembers(t, []byte(params))
	}
}

// TestModernCallAllocations guards the allocations of a 2026-07-28
// tools/call (BenchmarkServeToolsCall2026): reading _meta and checking
// Mcp-Method and Mcp-Name against the body allocate almost nothing, so a
// modern call costs at most a few allocations more than a 2025 stateless
// one (the agent id and version set from clientInfo, the suffix).
func TestModernCallAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation counts are measured without -short")
	}
	allocs := func(body string, h http.Header) float64 {
		br := benchBridge(t)
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range h {
			req.Header[k] = v
		}
		rd := bytes.NewReader(nil)
		w := &discardWriter{h: http.Header{}}
		return testing.AllocsPerRun(200, func() {
			rd.Reset([]byte(body))
			req.Body = io.NopCloser(rd)
			clear(w.h)
			w.status = 0
			br.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				t.Fatalf("HTTP %d", w.status)
			}
		})
	}
	legacy := allocs(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`,
		http.Header{"Mcp-Protocol-Version": {Revision20250618}})
	modern := allocs(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0"},`+
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`,
		http.Header{"Mcp-Protocol-Version": {Revision20260728}, HeaderMcpMethod: {"tools/call"}, HeaderMcpName: {"get-sync-status"}})
	t.Logf("allocations per tools/call: 2025 stateless %.0f, 2026-07-28 %.0f", legacy, modern)
	if modern > legacy+12 {
		t.Errorf("a 2026-07-28 tools/call allocates %.0f times, a 2025 one %.0f: the modern path's reading allocates again", modern, legacy)
	}
}
