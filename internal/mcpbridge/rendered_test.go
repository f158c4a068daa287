package mcpbridge_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// TestCachedResultRenderedOnce: a result the chain serves from its cache
// is rendered once per cached value (each principal has its own entry,
// whose hints were generated at its own miss), not per hit, and each
// call's answer is still the fresh rendering of its own result: its own
// metadata (trace and correlation ids, cached, timestamp) in the bytes
// the first hit rendered.
func TestCachedResultRenderedOnce(t *testing.T) {
	srv := newAuthServer(t, nil)
	callers := map[string]*client{}
	for _, key := range []string{keyAll, keyOther} {
		c := newClient(t, srv.HTTP)
		c.header.Set("Authorization", "Bearer "+key)
		c.initialize("rendered-once")
		callers[key] = c
	}
	args := map[string]any{"name": "show-knowledge", "arguments": map[string]any{"id": "pol-012-no-plaintext-secrets"}}
	call := func(key, correlation string) (json.RawMessage, *knowledgev1.ShowKnowledgeResponse) {
		t.Helper()
		c := callers[key]
		c.header.Set("X-Correlation-Id", correlation)
		r := c.call("tools/call", args)
		if r.Error != nil {
			t.Fatalf("tools/call: %d %s", r.Error.Code, r.Error.Message)
		}
		var res struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		}
		if err := json.Unmarshal(r.Result, &res); err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("result %s: %v", r.Result, err)
		}
		if res.Content[0].Text != string(res.StructuredContent) {
			t.Fatalf("text %s differs from structuredContent %s", res.Content[0].Text, res.StructuredContent)
		}
		out := &knowledgev1.ShowKnowledgeResponse{}
		if err := protojson.Unmarshal(res.StructuredContent, out); err != nil {
			t.Fatalf("structuredContent %s: %v", res.StructuredContent, err)
		}
		// The bytes are the fresh rendering of the message they carry.
		fresh, err := mcpbridge.RenderResult(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, res.StructuredContent) {
			t.Fatalf("served:\n%s\nrendered afresh:\n%s", res.StructuredContent, fresh)
		}
		return res.StructuredContent, out
	}

	_, first := call(keyAll, "corr-miss")
	if first.GetMetadata().GetCached() {
		t.Fatal("first call served from the cache")
	}
	before := mcpbridge.ResultSplits()
	type hit struct {
		key string
		out *knowledgev1.ShowKnowledgeResponse
	}
	var hits []hit
	fresh := map[string]*knowledgev1.ShowKnowledgeResponse{keyAll: first}
	for i, key := range []string{keyAll, keyAll, keyOther, keyOther, keyAll} {
		corr := "corr-hit-" + string(rune('a'+i))
		_, out := call(key, corr)
		if key == keyOther && i == 2 {
			// keyOther's first call: its own cache entry, a miss.
			if out.GetMetadata().GetCached() {
				t.Fatal("another principal's first call served from the first one's entry")
			}
			fresh[key] = out
			continue
		}
		md := out.GetMetadata()
		if !md.GetCached() || md.GetCorrelationId() != corr || md.GetTraceId() == "" {
			t.Fatalf("hit %d metadata = %v, want cached with correlation id %s", i, md, corr)
		}
		hits = append(hits, hit{key, out})
	}
	// Two principals, two cache entries: two renderings for four hits.
	if n := mcpbridge.ResultSplits() - before; n != 2 {
		t.Fatalf("%d renderings for %d hits of 2 cached values, want 2", n, len(hits))
	}
	for i := range 3 {
		call(keyOther, "corr-again-"+string(rune('a'+i)))
	}
	if n := mcpbridge.ResultSplits() - before; n != 2 {
		t.Fatalf("%d renderings after 3 more hits, want still 2", n)
	}
	seen := map[string]bool{}
	for _, f := range fresh {
		f.Metadata = nil
	}
	for _, h := range hits {
		if seen[h.out.GetMetadata().GetTraceId()] {
			t.Fatalf("trace id %s served twice", h.out.GetMetadata().GetTraceId())
		}
		seen[h.out.GetMetadata().GetTraceId()] = true
		h.out.Metadata = nil
		if !proto.Equal(h.out, fresh[h.key]) {
			t.Fatalf("hit without metadata %v differs from the principal's fresh result %v", h.out, fresh[h.key])
		}
	}
}
