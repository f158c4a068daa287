package drivers

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		name   string
		target string
		ok     bool
	}{
		{name: "ipv4 host port", target: "127.0.0.1:9090", ok: true},
		{name: "other loopback ipv4", target: "127.8.0.1:9090", ok: true},
		{name: "ipv6", target: "[::1]:8080", ok: true},
		{name: "localhost url", target: "http://localhost:8080/mcp", ok: true},
		{name: "loopback url", target: "http://127.0.0.1:8080/v1/echo", ok: true},
		{name: "public ip", target: "10.0.0.1:9090"},
		{name: "public url", target: "https://example.com/mcp"},
		{name: "name resolving to loopback is still refused", target: "localtest.me:80"},
		{name: "unspecified", target: "0.0.0.0:80"},
		{name: "other scheme", target: "ftp://127.0.0.1/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLoopback(tt.target)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckLoopback(%q) = %v, want ok=%v", tt.target, err, tt.ok)
			}
			if err != nil && tt.target != "ftp://127.0.0.1/" && !errors.Is(err, ErrNotLoopback) {
				t.Errorf("err %v is not ErrNotLoopback", err)
			}
		})
	}
}

func TestRotation(t *testing.T) {
	r := NewRotation([]string{"a", "b", "c"})
	var got []string
	for range 4 {
		got = append(got, r.Next())
	}
	if strings.Join(got, "") != "abca" {
		t.Errorf("rotation = %v", got)
	}
	var empty *Rotation[string]
	if empty.Next() != "" || empty.Len() != 0 {
		t.Error("nil rotation must hand out zero values")
	}
}

func TestReadRPC(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantErr     bool
		wantResult  string
	}{
		{name: "json", status: 200, contentType: "application/json", body: `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`, wantResult: `{"a":1}`},
		{name: "event stream skips notifications", status: 200, contentType: "text/event-stream",
			body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"b\":2}}\n\n", wantResult: `{"b":2}`},
		{name: "event stream without final blank line", status: 200, contentType: "text/event-stream; charset=utf-8",
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", wantResult: `{}`},
		{name: "empty stream", status: 200, contentType: "text/event-stream", body: "", wantErr: true},
		{name: "http error", status: 404, contentType: "application/json", body: `{}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: http.Header{"Content-Type": {tt.contentType}}, Body: io.NopCloser(strings.NewReader(tt.body))}
			msg, err := readRPC(resp)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && string(msg.Result) != tt.wantResult {
				t.Errorf("result = %s, want %s", msg.Result, tt.wantResult)
			}
		})
	}
}

// fakeMCP answers initialize with a session id and tools/call with a
// result whose isError is set when the arguments say so. It records the
// sessions and keys it saw.
type fakeMCP struct {
	mu       sync.Mutex
	inits    int
	sessions map[string]string // session → key
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Arguments map[string]any `json:"arguments"`
		} `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&m)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch m.Method {
	case "initialize":
		f.inits++
		id := "s" + string(rune('a'+f.inits))
		f.sessions[id] = r.Header.Get("Authorization")
		w.Header().Set("Mcp-Session-Id", id)
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`)
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/call":
		if s := r.Header.Get("Mcp-Session-Id"); s != "" && f.sessions[s] != r.Header.Get("Authorization") {
			http.Error(w, "session of another principal", http.StatusForbidden)
			return
		}
		isErr := m.Params.Arguments["fail"] == true
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":"+string(m.ID)+",\"result\":{\"isError\":"+map[bool]string{true: "true", false: "false"}[isErr]+"}}\n\n")
	case "tools/list":
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"tools":[]}}`)
	default:
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32601}}`)
	}
}

func TestMCPDriver(t *testing.T) {
	tests := []struct {
		name      string
		args      string
		keys      []string
		stateful  bool
		want      string
		wantInits int
	}{
		{name: "stateless sends no initialize", args: `{}`, want: "", wantInits: 0},
		{name: "stateful opens one session per worker", args: `{}`, stateful: true, want: "", wantInits: 2},
		{name: "stateful with keys opens one session per key", args: `{}`, keys: []string{"k1", "k2", "k3"}, stateful: true, want: "", wantInits: 3},
		{name: "tool error", args: `{"fail":true}`, want: "tool_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeMCP{sessions: map[string]string{}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			d, err := NewMCP(srv.Client(), srv.URL, "echo", []json.RawMessage{json.RawMessage(tt.args)}, tt.keys, tt.stateful)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 6 {
				if got := d.Call(t.Context(), i%2); got != tt.want {
					t.Fatalf("call %d = %q, want %q", i, got, tt.want)
				}
			}
			if f.inits != tt.wantInits {
				t.Errorf("%d initializes, want %d", f.inits, tt.wantInits)
			}
		})
	}
}

func TestRESTDriver(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	tests := []struct {
		name string
		keys []string
		want string
	}{
		{name: "ok", keys: []string{"good"}, want: ""},
		{name: "status code", keys: []string{"bad"}, want: "HTTP 401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := NewREST(srv.Client(), http.MethodGet, srv.URL, nil, tt.keys)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Call(t.Context(), 0); got != tt.want {
				t.Errorf("Call = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := NewREST(srv.Client(), http.MethodGet, "http://192.0.2.1/", nil, nil); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("non-loopback URL accepted: %v", err)
	}
}

func TestMCPRequestDriver(t *testing.T) {
	tests := []struct {
		name   string
		method string
		want   string
	}{
		{name: "tools/list", method: "tools/list", want: ""},
		{name: "unknown method", method: "tools/dance", want: "jsonrpc -32601"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(&fakeMCP{sessions: map[string]string{}})
			defer srv.Close()
			d, err := NewMCPRequest(srv.Client(), srv.URL, tt.method, json.RawMessage(`{}`), true)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Call(t.Context(), 0); got != tt.want {
				t.Errorf("Call = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMCPModernDriver: the 2026-07-28 driver sends each tools/call alone,
// with the revision header, Mcp-Method and Mcp-Name naming what the body
// asks, and _meta carrying the revision, client and capabilities.
func TestMCPModernDriver(t *testing.T) {
	var calls int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string                     `json:"name"`
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Error(err)
		}
		calls++
		if r.Header.Get("Mcp-Protocol-Version") != MCPModernVersion || r.Header.Get("Mcp-Method") != m.Method ||
			r.Header.Get("Mcp-Name") != m.Params.Name || m.Method != "tools/call" || r.Header.Get("Mcp-Session-Id") != "" ||
			string(m.Params.Meta["io.modelcontextprotocol/protocolVersion"]) != `"`+MCPModernVersion+`"` ||
			m.Params.Meta["io.modelcontextprotocol/clientCapabilities"] == nil {
			t.Errorf("request %s %v %+v", m.Method, r.Header, m.Params)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[],"isError":false,"resultType":"complete"}}`))
	}))
	defer srv.Close()
	d, err := NewMCPModern(srv.Client(), srv.URL, "echo", []json.RawMessage{json.RawMessage(`{"text":"x"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if got := d.Call(t.Context(), i); got != "" {
			t.Fatalf("call %d = %q", i, got)
		}
	}
	if calls != 3 {
		t.Errorf("%d requests for 3 calls (no initialize, no notification)", calls)
	}
}
