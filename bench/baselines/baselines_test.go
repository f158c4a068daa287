package baselines_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/toolsvc/toolsvc/bench/baselines"
	"github.com/toolsvc/toolsvc/bench/internal/drivers"
	"github.com/toolsvc/toolsvc/bench/internal/load"
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
		{name: "gateway in process", kind: baselines.KindGatewayInProcess},
		{name: "gateway loopback", kind: baselines.KindGatewayLoopback},
		{name: "go-sdk stateless", kind: baselines.KindGoSDKStateless},
		{name: "go-sdk stateful", kind: baselines.KindGoSDKStateful},
		{name: "mark3labs stateless", kind: baselines.KindMark3Stateless},
		{name: "mark3labs stateful", kind: baselines.KindMark3Stateful},
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
	case baselines.KindGRPC:
		conn, err := grpc.NewClient(s.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		return drivers.NewGRPC(conn, baselines.EchoMethod, []proto.Message{wrapperspb.String("x")}, (&wrapperspb.StringValue{}).ProtoReflect().Type(), nil)
	case baselines.KindGatewayInProcess, baselines.KindGatewayLoopback:
		body, _ := json.Marshal("x")
		d, err := drivers.NewREST(client, http.MethodPost, "http://"+s.Addr+baselines.GatewayPath, [][]byte{body}, nil)
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

func TestStartRefusesUnknownKinds(t *testing.T) {
	if _, err := baselines.Start(t.Context(), "nginx"); !errors.Is(err, baselines.ErrUnknownKind) {
		t.Errorf("err = %v, want ErrUnknownKind", err)
	}
}
