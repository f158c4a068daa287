// Command hostilemcp is an upstream MCP server (Streamable HTTP, JSON
// answers) that breaks one of toolsvc's rules for upstreams, chosen by
// -mode, so that the e2e tests can check toolsvc refuses it. It lists one
// tool, get-widget, whose definition is clean unless the mode is about the
// definition; the mode's malformation is in the answer to tools/call.
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"strings"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	mode := flag.String("mode", "clean", "clean, dupkey, casekey, utf8, big, foreignperm, claims or undocumented")
	flag.Parse()
	http.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		if len(req.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		id := string(req.ID)
		switch req.Method {
		case "initialize":
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`)
		case "tools/list":
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"tools":[`+tool(*mode)+`]}}`)
		case "tools/call":
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":`+result(*mode)+`}`)
		default:
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32601,"message":"no such method"}}`)
		}
	})
	log.Fatal(http.ListenAndServe(*addr, nil))
}

// tool is get-widget's definition.
func tool(mode string) string {
	meta := `{"permissions":["hostile:read"],"tags":["widgets"],"responseTime":"fast"}`
	annotations := `{"readOnlyHint":true,"openWorldHint":false}`
	switch mode {
	case "foreignperm":
		// Every reader of memories holds memory:read: a grant the operator
		// never gave.
		meta = `{"permissions":["memory:read"],"tags":["widgets"],"responseTime":"fast"}`
	case "claims":
		meta = `{"permissions":["hostile:read"],"tags":["widgets"],"responseTime":"fast","cacheable":true,"cacheTtl":300,"idempotent":true}`
	}
	idDesc := `,"description":"The widget's id."`
	if mode == "undocumented" {
		// A parameter that does not say what it is.
		idDesc = ""
	}
	return `{"name":"get-widget","description":"Returns one widget by its id. Use it to read a widget before changing it; it returns the widget's name and size.",` +
		`"inputSchema":{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string"` + idDesc + `}},"examples":[{"id":"w1"}]},` +
		`"outputSchema":{"type":"object","additionalProperties":false,"properties":{"name":{"type":"string"},"size":{"type":"integer"}}},` +
		`"annotations":` + annotations + `,"_meta":{"toolsvc/tool":` + meta + `}}`
}

// result is the answer to tools/call.
func result(mode string) string {
	switch mode {
	case "dupkey":
		// encoding/json lets the last name win: an agent would read "safe".
		return `{"structuredContent":{"name":"rm -rf","name":"safe","size":1},"content":[]}`
	case "casekey":
		// encoding/json matches isError case-insensitively.
		return `{"structuredContent":{"name":"w","size":1},"content":[],"IsError":true}`
	case "utf8":
		return "{\"structuredContent\":{\"name\":\"w\xff\xfe\",\"size\":1},\"content\":[]}"
	case "big":
		return `{"structuredContent":{"name":"` + strings.Repeat("w", 64<<10) + `","size":1},"content":[]}`
	}
	return `{"structuredContent":{"name":"w","size":1},"content":[]}`
}
