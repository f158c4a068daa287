package mcpbridge

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// The benchmarks of this file measure the bridge alone, in process: its
// HTTP handling, JSON-RPC decoding, listing and result encoding, with a
// channel that answers at once. They are the bridge's share of the
// loopback benchmarks of bench_test.go, without their noise. Run:
//
//	go test -run '^$' -bench 'BenchmarkServe' -benchmem ./internal/mcpbridge/

// syncStatusJSON is a get-sync-status result as the real tool returns it.
const syncStatusJSON = `{"data":{"healthy":false,"timeSinceSync":"never","failedItems":0,"stats":{"totalSyncs":0,"totalItemsSynced":0,"avgSyncDurationMs":0},"failures":[]},
"agentHints":{"suggestedNextActions":[{"action":"sync-knowledge","priority":"high","data":{},"description":"Knowledge was never synced into memory in this tenant: sync now.","category":"correction","prerequisites":[],"expectedOutcome":""}],
"relatedResources":[],"confidence":0,"sourceQuality":"low","validityPeriod":"short","contextNeeded":[],"assumptions":[],"riskFactors":[],"dependencies":[],
"estimatedImpact":{"benefit":0.8,"effort":0.3,"roi":2.666666666666667,"affectedMetrics":["knowledge freshness"]},"preferenceAlignment":[],"reasoning":"No sync has run in this tenant.",
"warnings":[],"alternatives":[],"constraints":[],"metadata":{"generatedAt":"2026-11-22T05:04:53.638107759Z","generatedBy":"toolsvc/get-sync-status","modelVersion":"","processingTime":0.007}},
"metadata":{"toolVersion":"1.0.0","timestamp":"2026-11-22T05:04:53.637621529Z","executionTimeMs":2.951,"serviceVersion":"0.1.0","traceId":"fad010fea17a5e436e26cd10f071ad83",
"correlationId":"1fb0130f-7f55-4863-b19a-5399019b28a6","cached":false,"tool":"get-sync-status"}}`

// cannedChannel answers every call with a copy of its response.
type cannedChannel struct{ resp proto.Message }

func (c cannedChannel) Invoke(_ context.Context, _ string, _, reply any, _ ...grpc.CallOption) error {
	out := reply.(proto.Message)
	proto.Reset(out)
	proto.Merge(out, c.resp)
	return nil
}

func (cannedChannel) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	panic("no streams")
}

// benchBridge builds a stateless bridge over the built-in contracts in
// development mode, with the channel answering get-sync-status.
func benchBridge(tb testing.TB) *Bridge {
	tb.Helper()
	reg, err := registry.New([]registry.Service{
		{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: memoryv1.UnimplementedMemoryServiceServer{}},
		{Desc: &knowledgev1.KnowledgeService_ServiceDesc, Impl: knowledgev1.UnimplementedKnowledgeServiceServer{}},
		{Desc: &syncv1.SyncService_ServiceDesc, Impl: syncv1.UnimplementedSyncServiceServer{}},
		{Desc: &auditv1.AuditService_ServiceDesc, Impl: auditv1.UnimplementedAuditServiceServer{}},
	}, registry.WithSourceInfo(descriptor.Set))
	if err != nil {
		tb.Fatal(err)
	}
	resp := &syncv1.GetSyncStatusResponse{}
	if err := protojson.Unmarshal([]byte(syncStatusJSON), resp); err != nil {
		tb.Fatal(err)
	}
	b, err := New(Config{Registry: reg, Channel: cannedChannel{resp}, Auth: auth.NewDevelopment(), Stateless: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	return b
}

// discardWriter is a ResponseWriter that keeps only the status and the
// byte count.
type discardWriter struct {
	h      http.Header
	status int
	n      int
	body   []byte // the last body, when kept
	keep   bool
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(s int)   { w.status = s }
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	if w.keep {
		w.body = append(w.body, p...)
	}
	return len(p), nil
}

// serveLoop posts body b.N times to the bridge and checks each answer
// with check; headers, if given, are set on the request (a 2026-07-28
// request's).
func serveLoop(b *testing.B, br *Bridge, body string, check func(*testing.B, []byte), headers ...http.Header) {
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", Revision20250618)
	for _, h := range headers {
		for k, v := range h {
			req.Header[k] = v
		}
	}
	rd := bytes.NewReader(nil)
	w := &discardWriter{h: http.Header{}, keep: true}
	serve := func() {
		rd.Reset([]byte(body))
		req.Body = io.NopCloser(rd)
		clear(w.h)
		w.status, w.n, w.body = 0, 0, w.body[:0]
		br.ServeHTTP(w, req)
	}
	serve()
	check(b, w.body)
	if cl := w.h.Get("Content-Length"); cl != strconv.Itoa(w.n) {
		b.Fatalf("Content-Length %q, body %d bytes", cl, w.n)
	}
	w.keep = false
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		serve()
		if w.status != http.StatusOK {
			b.Fatalf("HTTP %d", w.status)
		}
	}
	b.SetBytes(int64(w.n))
}

// BenchmarkServeToolsList: the first page of tools/list, cached, with
// 10, 100 and 1,000 registered tools.
func BenchmarkServeToolsList(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			br := benchBridge(b)
			if err := SyntheticTools(br, n); err != nil {
				b.Fatal(err)
			}
			serveLoop(b, br, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, func(b *testing.B, body []byte) {
				if got, want := bytes.Count(body, []byte(`{"name":"tool-`)), min(n, 100); got != want {
					b.Fatalf("%d tools listed, want %d", got, want)
				}
			})
		})
	}
}

// BenchmarkServeToolsCall: tools/call of get-sync-status, the channel
// answering at once: the bridge's own cost of a call.
func BenchmarkServeToolsCall(b *testing.B) {
	br := benchBridge(b)
	serveLoop(b, br, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{}}}`, func(b *testing.B, body []byte) {
		if !bytes.Contains(body, []byte(`"structuredContent":{`)) || !bytes.HasSuffix(body, []byte(`"isError":false}}`)) {
			b.Fatalf("tools/call = %s", body)
		}
	})
}

// BenchmarkServeToolsCall2026: the same call in revision 2026-07-28: no
// session, _meta read per request, Mcp-Method and Mcp-Name checked
// against the body, resultType and serverInfo added to the result.
func BenchmarkServeToolsCall2026(b *testing.B) {
	br := benchBridge(b)
	h := http.Header{}
	h.Set("Mcp-Protocol-Version", Revision20260728)
	h.Set(HeaderMcpMethod, "tools/call")
	h.Set(HeaderMcpName, "get-sync-status")
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-sync-status","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	serveLoop(b, br, body, func(b *testing.B, body []byte) {
		if !bytes.Contains(body, []byte(`"structuredContent":{`)) || !bytes.Contains(body, []byte(`"resultType":"complete"`)) {
			b.Fatalf("tools/call = %s", body)
		}
	}, h)
}
