package mcpcheck

import (
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		want    Summary
		wantErr bool
	}{
		{name: "page", body: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","d":"x\"]}"},{"n":[1,{"k":null}]}],"nextCursor":"c"}}` + "\n",
			want: Summary{Result: true, Tools: 2, NextCursor: true}},
		{name: "empty page", body: `{"result":{"tools":[]},"id":"x","jsonrpc":"2.0"}`, want: Summary{Result: true, Tools: 0}},
		{name: "call", body: `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, want: Summary{Result: true, IsError: true, Tools: -1}},
		{name: "error", body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m"}}`, want: Summary{Error: true, Tools: -1}},
		{name: "escaped backslash", body: `{"result":{"tools":["a\\",{}]}}`, want: Summary{Result: true, Tools: 2}},
		{name: "spaces", body: ` { "result" : { "tools" : [ 1 , 2 ] } } `, want: Summary{Result: true, Tools: 2}},
		{name: "truncated", body: `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}`, wantErr: true},
		{name: "unterminated string", body: `{"result":{"tools":["abc]}}`, wantErr: true},
		{name: "trailing garbage", body: `{"result":{}} x`, wantErr: true},
		{name: "missing colon", body: `{"result" {}}`, wantErr: true},
		{name: "not an object", body: `[1]`, wantErr: true},
		{name: "empty", body: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Scan([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %t", err, tt.wantErr)
			}
			if err == nil && got != tt.want {
				t.Fatalf("Scan = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		wantErr bool
	}{
		{name: "success", body: `{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"isError":true},"isError":false}}`},
		{name: "tool error", body: `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, wantErr: true},
		{name: "rpc error", body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"isError"}}`, wantErr: true},
		{name: "garbage", body: `{"jsonrpc":`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := Call([]byte(tt.body)); (err != nil) != tt.wantErr {
				t.Fatalf("Call = %v, wantErr %t", err, tt.wantErr)
			}
		})
	}
}

func page(id string, tools int, cursor bool) string {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[`)
	for i := range tools {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"t","inputSchema":{"type":"object"}}`)
	}
	b.WriteString("]")
	if cursor {
		b.WriteString(`,"nextCursor":"abc"`)
	}
	b.WriteString("}}")
	return b.String()
}

// TestListCheck checks pages, and that a verified page only spares the
// scan of the same bytes.
func TestListCheck(t *testing.T) {
	t.Parallel()
	c := &ListCheck{Tools: 3, More: true}
	steps := []struct {
		name    string
		body    string
		wantErr bool
	}{
		{name: "first page", body: page("1", 3, true)},
		{name: "same page, other id", body: page(`"req-2"`, 3, true)},
		{name: "too few tools", body: page("3", 2, true), wantErr: true},
		{name: "no cursor", body: page("4", 3, false), wantErr: true},
		{name: "truncated copy", body: page("5", 3, true)[:60], wantErr: true},
		{name: "error", body: `{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"m"}}`, wantErr: true},
		{name: "same page again", body: page("7", 3, true)},
	}
	for _, s := range steps {
		if err := c.Check([]byte(s.body)); (err != nil) != s.wantErr {
			t.Fatalf("%s: Check = %v, wantErr %t", s.name, err, s.wantErr)
		}
	}
}

// BenchmarkScan is the client's cost of reading a large page without the
// shortcut of ListCheck.
func BenchmarkScan(b *testing.B) {
	body := []byte(page("1", 5000, true))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if s, err := Scan(body); err != nil || s.Tools != 5000 {
			b.Fatal(s, err)
		}
	}
}
