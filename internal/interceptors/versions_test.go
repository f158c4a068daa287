package interceptors_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/rpc/inproc"
	"github.com/toolsvc/toolsvc/internal/rpc/toolservice"
	"github.com/toolsvc/toolsvc/internal/store/cache"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
	"github.com/toolsvc/toolsvc/internal/tests/support/testproto"
)

// versionsChain serves the test widgets through the real chain; each
// handler reports which method served it.
func versionsChain(t *testing.T, now time.Time) (toolsvcv1.ToolServiceClient, *testenv.Buffer) {
	t.Helper()
	c := testproto.Compile(t, "testdata", "versions.proto")
	serve := func(method string) testproto.Handler {
		return func(_ context.Context, req, resp *dynamicpb.Message) error {
			data := dynamicpb.NewMessage(resp.Descriptor().Fields().ByName("data").Message())
			data.Set(data.Descriptor().Fields().ByName("id"), req.Get(req.Descriptor().Fields().ByName("id")))
			data.Set(data.Descriptor().Fields().ByName("served_by"), protoreflect.ValueOfString(method))
			resp.Set(resp.Descriptor().Fields().ByName("data"), protoreflect.ValueOfMessage(data))
			testproto.SetMessage(resp, "agent_hints", okHints())
			return nil
		}
	}
	desc := c.Service("WidgetService", map[string]testproto.Handler{
		"GetWidget": serve("GetWidget"), "GetWidgetV2": serve("GetWidgetV2"), "FindWidget": serve("FindWidget"),
	})
	reg, err := registry.New([]registry.Service{{Desc: desc}}, registry.WithResolver(c.Files, c.Types))
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	v, _ := protovalidate.New()
	logs := &testenv.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	m := interceptors.NewMetrics(nil)
	auditor := runAuditor(t, st, logger)
	mc := cache.NewMemory(1 << 20)
	chain, err := interceptors.Chain(interceptors.Config{
		Registry: reg, Auth: auth.NewDevelopment(), Limiter: ratelimit.NewMemory(), Cache: mc, Group: cache.NewGroup(mc),
		Auditor: auditor, Validator: v, Metrics: m, Logger: logger, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	ch := inproc.New(chain)
	ch.RegisterService(desc, nil)
	toolsvcv1.RegisterToolServiceServer(ch, toolservice.New(reg))
	return toolsvcv1.NewToolServiceClient(ch), logs
}

func call(t *testing.T, c toolsvcv1.ToolServiceClient, name, version string) (*toolsvcv1.CallToolResponse, error) {
	t.Helper()
	args, _ := structpb.NewStruct(map[string]any{"id": "w1"})
	return c.CallTool(context.Background(), &toolsvcv1.CallToolRequest{Name: name, Version: version, Arguments: args})
}

func TestVersionsSideBySideAndDeprecation(t *testing.T) {
	before := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	client, logs := versionsChain(t, before)

	// A bare name resolves to the highest version.
	resp, err := call(t, client, "get-widget", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.GetData().GetFields()["servedBy"].GetStringValue(); got != "GetWidgetV2" || resp.GetMetadata().GetToolVersion() != "2.0.0" {
		t.Fatalf("bare name served by %s version %s, want GetWidgetV2 2.0.0", got, resp.GetMetadata().GetToolVersion())
	}
	if len(resp.GetAgentHints().GetWarnings()) != 0 {
		t.Fatalf("2.0.0 is not deprecated but has warnings %v", resp.GetAgentHints().GetWarnings())
	}

	// The deprecated version still answers, with a warning in its hints and the log.
	resp, err = call(t, client, "get-widget", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetData().GetFields()["servedBy"].GetStringValue() != "GetWidget" {
		t.Fatalf("1.0.0 served by %v", resp.GetData())
	}
	ws := resp.GetAgentHints().GetWarnings()
	if len(ws) != 1 || ws[0].GetType() != "deprecation" || !strings.Contains(ws[0].GetSuggestedFix(), "find-widget") {
		t.Fatalf("warnings = %v, want one deprecation warning naming find-widget", ws)
	}
	if !strings.Contains(logs.String(), "deprecated tool called") {
		t.Fatalf("no deprecation warning in the log:\n%s", logs.String())
	}

	// An exact pin reaches the deprecated version too, with its warning.
	resp, err = call(t, client, "get-widget", "=1.0.0")
	if err != nil || resp.GetMetadata().GetToolVersion() != "1.0.0" || len(resp.GetAgentHints().GetWarnings()) != 1 {
		t.Fatalf("=1.0.0: %v, %v; want 1.0.0 with its deprecation warning", resp, err)
	}

	// GetTool reports both versions.
	gt, err := client.GetTool(context.Background(), &toolsvcv1.GetToolRequest{Name: "get-widget"})
	if err != nil || gt.GetTool().GetVersion() != "2.0.0" || strings.Join(gt.GetVersions(), ",") != "1.0.0,2.0.0" {
		t.Fatalf("GetTool = %v, %v", gt, err)
	}

	// After the removal date the deprecated version is refused, naming the replacement.
	after, _ := versionsChain(t, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	_, err = call(t, after, "get-widget", "1.0.0")
	_, te := toolError(t, err)
	if te.GetCode() != "NOT_FOUND" || !strings.Contains(te.GetMessage(), "find-widget") || !strings.Contains(te.GetMessage(), "2026-12-31") {
		t.Fatalf("after removal: %v", te)
	}
	_, err = call(t, after, "get-widget", "=1.0.0")
	if _, te := toolError(t, err); te.GetCode() != "NOT_FOUND" {
		t.Fatalf("=1.0.0 after removal: %v", te)
	}
	if _, err := call(t, after, "get-widget", ""); err != nil {
		t.Fatalf("the current version must keep answering: %v", err)
	}
}
