package e2e

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// TestSearchStepsAreTraced: with --otlp-endpoint, a hybrid search-memories
// call on each transport exports its call's span and, in the same trace,
// one span for each step of the search (full text, nearest vectors and
// their parts, ranking, the page; PostgreSQL's two statements), each a
// child of the call or of the step it belongs to. The spans go to a real
// OTLP/HTTP receiver on loopback and are decoded as a collector would.
func TestSearchStepsAreTraced(t *testing.T) {
	dir := offlineModel(t)
	for _, backend := range []string{testserver.SQLite, testserver.Postgres} {
		t.Run(backend, func(t *testing.T) { searchStepsAreTraced(t, backend, dir) })
	}
}

func searchStepsAreTraced(t *testing.T, backend, dir string) {
	col := &collector{}
	recv := httptest.NewServer(col)
	t.Cleanup(recv.Close)
	s := testserver.New(t, testserver.Options{Backend: backend, Configure: func(c *server.Config) {
		c.EmbeddingsModelDir = dir
		c.OTLPEndpoint = recv.URL
	}})
	parents := map[string]string{
		"memory.full_text": "search-memories", "memory.nearest": "search-memories", "memory.rank": "search-memories",
		"memory.page": "search-memories", "memory.embed_query": "memory.nearest", "memory.vector_index": "memory.nearest",
		"memory.nearest_rows": "memory.nearest",
	}
	if backend == testserver.Postgres {
		parents["postgres.window"] = "memory.full_text"
		parents["postgres.candidates"] = "memory.full_text"
	}
	transports := []Transport{GRPC{S: s}, REST{S: s}, MCP{S: s}}
	for _, tr := range transports {
		ctx := context.Background()
		hdr := map[string]string{"x-user-id": "u-" + tr.Name()}
		out, err := tr.Call(ctx, "", "add-memory", map[string]any{"content": "The billing service stores invoices in PostgreSQL", "layer": "user"}, hdr)
		if err != nil || out.Code != "OK" {
			t.Fatalf("%s add-memory: %v %v", tr.Name(), err, out.Error)
		}
		out, err = tr.Call(ctx, "", "search-memories", map[string]any{"query": "billing invoices"}, hdr)
		if err != nil || out.Code != "OK" {
			t.Fatalf("%s search-memories: %v %v", tr.Name(), err, out.Error)
		}
	}

	// Spans leave in batches: wait for the three searches' traces.
	var searches map[string]map[string]*tracepb.Span
	for deadline := time.Now().Add(20 * time.Second); ; {
		searches = col.traces("search-memories")
		if len(searches) >= len(transports) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(searches) != len(transports) {
		t.Fatalf("%d traced searches exported, want %d", len(searches), len(transports))
	}
	for id, spans := range searches {
		if call := spans["search-memories"]; call.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("trace %s: the call's span is of kind %s", id, call.GetKind())
		}
		for name, parent := range parents {
			sp, p := spans[name], spans[parent]
			switch {
			case sp == nil || p == nil:
				t.Errorf("trace %s: span %s or its parent %s missing (have %d spans)", id, name, parent, len(spans))
			case string(sp.GetParentSpanId()) != string(p.GetSpanId()):
				t.Errorf("trace %s: span %s has parent %s, want %s", id, name, hex.EncodeToString(sp.GetParentSpanId()), parent)
			}
		}
		if len(spans) != len(parents)+1 {
			t.Errorf("trace %s: %d spans, want the call's and %d steps", id, len(spans), len(parents))
		}
	}
}

// collector is an OTLP/HTTP trace receiver: it decodes each export and
// keeps its spans.
type collector struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	req := &coltracepb.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(body, req)
	}
	if r.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, "want an OTLP protobuf export on /v1/traces", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// traces returns, by trace id, the spans by name of every trace that has
// a span named root.
func (c *collector) traces(root string) map[string]map[string]*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := map[string]map[string]*tracepb.Span{}
	for _, sp := range c.spans {
		id := hex.EncodeToString(sp.GetTraceId())
		if all[id] == nil {
			all[id] = map[string]*tracepb.Span{}
		}
		all[id][sp.GetName()] = sp
	}
	for id, spans := range all {
		if spans[root] == nil {
			delete(all, id)
		}
	}
	return all
}
