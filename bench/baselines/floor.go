package baselines

import (
	"io"
	"net/http"
)

// FloorAnswer is the fixed JSON-RPC answer of HTTPFloor: a tools/call
// result of the size of a small cached tool result.
var FloorAnswer = []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"ok\":true}"}],"structuredContent":{"ok":true}}}` + "\n")

// HTTPFloor is the cheapest server of a JSON-RPC call over HTTP: it reads
// the request's body to the end and writes FloorAnswer, without parsing
// either. A tool service's cached read is measured against it: whatever
// a server does beyond this is its own cost.
func HTTPFloor() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(FloorAnswer)
	})
}
