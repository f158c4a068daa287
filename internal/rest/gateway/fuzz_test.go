package gateway

import (
	"errors"
	"testing"
)

// FuzzDecodeSeedCall: any body either decodes to a call naming a tool or
// is refused as a 4xx apiError; it never panics.
func FuzzDecodeSeedCall(f *testing.F) {
	for _, s := range []string{
		`{"toolName":"search-memories","input":{"query":"x"}}`,
		`{"toolName":"x","arguments":null}`,
		`{"toolName":"x","input":{},"arguments":{}}`,
		`{"toolName":5}`, `[]`, `null`, ``, `{"input":"x"}`, `{"toolName":"x","input":  {"a":[1,{"b":null}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodeSeedCall(body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status < 400 || ae.status >= 500 {
				t.Fatalf("error %v is not a 4xx apiError", err)
			}
			return
		}
		if req.GetName() == "" {
			t.Fatal("decoded a call without a tool name")
		}
	})
}
