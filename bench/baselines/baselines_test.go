package baselines_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/toolsvc/toolsvc/bench/baselines"
	"github.com/toolsvc/toolsvc/bench/internal/drivers"
	"github.com/toolsvc/toolsvc/bench/internal/load"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
)

func start(t testing.TB, kind string) *baselines.Server {
	t.Helper()
	s, err := baselines.Start(t.Context(), kind)
	if err != nil {
		t.Fatalf("start %s: %v", kind, err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestGRPCEchoes(t *testing.T) {
	s := start(t, baselines.KindGRPC)
	conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp := new(wrapperspb.StringValue)
	if err := conn.Invoke(t.Context(), baselines.EchoMethod, wrapperspb.String("ping"), resp); err != nil {
		t.Fatal(err)
	}
	if resp.GetValue() != "ping" {
		t.Errorf("echo = %q, want ping", resp.GetValue())
	}
}

// TestEveryKindServesLoad drives each baseline through the same driver the
// load tool uses and expects every call to succeed.
func TestEveryKindServesLoad(t *testing.T) {
	tests := []struct {
		name string
		kind string
	}{
		{name: "grpc", kind: baselines.KindGRPC},
		{name: "grpc get-sync-status", kind: baselines.KindGRPCSyncStatus},
		{name: "gateway in process", kind: baselines.KindGatewayInProcess},
		{name: "gateway get-sync-status", kind: baselines.KindGatewaySyncStatus},
		{name: "mark3labs get-sync-status", kind: baselines.KindMark3SyncStatus},
		{name: "gateway loopback", kind: baselines.KindGatewayLoopback},
		{name: "go-sdk stateless", kind: baselines.KindGoSDKStateless},
		{name: "go-sdk stateful", kind: baselines.KindGoSDKStateful},
		{name: "mark3labs stateless", kind: baselines.KindMark3Stateless},
		{name: "mark3labs stateful", kind: baselines.KindMark3Stateful},
		{name: "mark3labs 2026", kind: baselines.KindMark3Modern},
		{name: "mark3labs get-sync-status 2026", kind: baselines.KindMark3SyncStatusModern},
		{name: "net/http floor", kind: baselines.KindHTTPFloor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, tt.kind)
			target := newTarget(t, s)
			for w := range 3 {
				for range 2 {
					if code := target.Call(t.Context(), w); code != "" {
						t.Fatalf("worker %d: call failed: %s", w, code)
					}
				}
			}
		})
	}
}

func newTarget(t testing.TB, s *baselines.Server) load.Target {
	t.Helper()
	client := drivers.NewHTTPClient(4)
	t.Cleanup(client.CloseIdleConnections)
	switch s.Kind {
	case baselines.KindGRPCSyncStatus:
		conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return drivers.NewGRPC(conn, baselines.SyncStatusMethod, []proto.Message{&syncv1.GetSyncStatusRequest{}},
			(&syncv1.GetSyncStatusResponse{}).ProtoReflect().Type(), nil)
	case baselines.KindGRPC:
		conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return drivers.NewGRPC(conn, baselines.EchoMethod, []proto.Message{wrapperspb.String("x")}, (&wrapperspb.StringValue{}).ProtoReflect().Type(), nil)
	case baselines.KindGatewaySyncStatus:
		d, err := drivers.NewREST(client, http.MethodGet, "http://"+s.Addr+"/v1/sync/status", [][]byte{nil}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	case baselines.KindGatewayInProcess, baselines.KindGatewayLoopback:
		body, _ := json.Marshal("x")
		d, err := drivers.NewREST(client, http.MethodPost, "http://"+s.Addr+baselines.GatewayPath, [][]byte{body}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	case baselines.KindMark3SyncStatus:
		d, err := drivers.NewMCP(client, "http://"+s.Addr+baselines.MCPPath, "get-sync-status", []json.RawMessage{json.RawMessage(`{}`)}, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		return d
	case baselines.KindMark3SyncStatusModern:
		d, err := drivers.NewMCPModern(client, "http://"+s.Addr+baselines.MCPPath, "get-sync-status", []json.RawMessage{json.RawMessage(`{}`)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	case baselines.KindMark3Modern, baselines.KindHTTPFloor:
		d, err := drivers.NewMCPModern(client, "http://"+s.Addr+baselines.MCPPath, baselines.EchoTool, []json.RawMessage{json.RawMessage(`{"text":"x"}`)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	default:
		stateful := s.Kind == baselines.KindGoSDKStateful || s.Kind == baselines.KindMark3Stateful
		d, err := drivers.NewMCP(client, "http://"+s.Addr+baselines.MCPPath, baselines.EchoTool, []json.RawMessage{json.RawMessage(`{"text":"x"}`)}, nil, stateful)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

// syncStatus calls get-sync-status on the gRPC baseline s.
func syncStatus(t *testing.T, s *baselines.Server) *syncv1.GetSyncStatusResponse {
	t.Helper()
	conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := syncv1.NewSyncServiceClient(conn).GetSyncStatus(t.Context(), &syncv1.GetSyncStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestSyncStatusServesTheSeededRun checks that the same-work baseline runs
// the product's tool on a seeded store: a healthy status with one sync.
func TestSyncStatusServesTheSeededRun(t *testing.T) {
	resp := syncStatus(t, start(t, baselines.KindGRPCSyncStatus))
	if d := resp.GetData(); !d.GetHealthy() || d.GetStats().GetTotalSyncs() != 1 || resp.GetAgentHints() == nil {
		t.Errorf("get-sync-status = %v, want healthy with one sync and hints", resp)
	}
}

// TestSyncStatusReportsTheKnowledgeSet checks that WithKnowledge gives the
// same-work baseline toolsvc's knowledge work: get-sync-status reports the
// loaded set (its digest), and without it reports none.
func TestSyncStatusReportsTheKnowledgeSet(t *testing.T) {
	for _, tt := range []struct {
		name       string
		opts       []baselines.Option
		wantDigest bool
	}{
		{name: "example knowledge", opts: []baselines.Option{baselines.WithKnowledge(filepath.Join("..", "..", "examples", "knowledge"))}, wantDigest: true},
		{name: "no knowledge"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := baselines.Start(t.Context(), baselines.KindGRPCSyncStatus, tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			resp := syncStatus(t, s)
			if got := resp.GetData().GetKnowledgeSet().GetDigest() != ""; got != tt.wantDigest {
				t.Errorf("knowledge set digest present = %v, want %v (%v)", got, tt.wantDigest, resp.GetData().GetKnowledgeSet())
			}
		})
	}
	if _, err := baselines.Start(t.Context(), baselines.KindGRPCSyncStatus, baselines.WithKnowledge(t.TempDir()+"/missing")); err == nil {
		t.Error("a missing knowledge directory started the baseline")
	}
}

func TestStartRefusesUnknownKinds(t *testing.T) {
	if _, err := baselines.Start(t.Context(), "nginx"); !errors.Is(err, baselines.ErrUnknownKind) {
		t.Errorf("err = %v, want ErrUnknownKind", err)
	}
}

// TestSyncStatusGatewayServesTheSeededRun checks the same-work REST
// baseline: the generated gateway route answers the tool's JSON.
func TestSyncStatusGatewayServesTheSeededRun(t *testing.T) {
	s := start(t, baselines.KindGatewaySyncStatus)
	resp, err := http.Get("http://" + s.Addr + "/v1/sync/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Healthy bool `json:"healthy"`
			Stats   struct {
				TotalSyncs json.Number `json:"totalSyncs"`
			} `json:"stats"`
		} `json:"data"`
		AgentHints map[string]any `json:"agentHints"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !out.Data.Healthy || out.Data.Stats.TotalSyncs != "1" || out.AgentHints == nil {
		t.Errorf("GET /v1/sync/status = %d %+v, want 200, healthy with one sync and hints", resp.StatusCode, out)
	}
}

// TestHTTPFloorAnswersFixed checks that the floor answers its fixed
// tools/call result to a large body, whatever it was sent.
func TestHTTPFloorAnswersFixed(t *testing.T) {
	s := start(t, baselines.KindHTTPFloor)
	body := strings.NewReader(strings.Repeat("x", 1<<16))
	resp, err := http.Post("http://"+s.Addr+baselines.MCPPath, "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, baselines.FloorAnswer) {
		t.Errorf("floor answered %d %q, want 200 %q", resp.StatusCode, got, baselines.FloorAnswer)
	}
}
