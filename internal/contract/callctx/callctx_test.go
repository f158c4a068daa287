package callctx_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
)

func TestFactsTravelInTheContext(t *testing.T) {
	ctx := t.Context()
	if callctx.From(ctx) != nil {
		t.Fatal("a bare context has facts")
	}
	f := &callctx.Facts{Tenant: "acme", Subject: "key:ci", Identifiers: map[string]string{callctx.KeyUserID: "u1"}}
	got := callctx.From(callctx.With(ctx, f))
	if got != f {
		t.Fatalf("From(With(f)) = %p, want %p", got, f)
	}
	if got.ID(callctx.KeyUserID) != "u1" || got.ID(callctx.KeyTeamID) != "" {
		t.Errorf("ID = %q, %q", got.ID(callctx.KeyUserID), got.ID(callctx.KeyTeamID))
	}
}

func TestNilFactsAreSafe(t *testing.T) {
	var f *callctx.Facts
	if f.ID(callctx.KeyTenant) != "" {
		t.Error("nil facts know a tenant")
	}
	ids := f.CloneIdentifiers()
	ids["x"] = "y" // must be writable
	if len((&callctx.Facts{}).CloneIdentifiers()) != 0 {
		t.Error("facts without identifiers clone to a non-empty map")
	}
}

func TestCloneIdentifiersDoesNotAlias(t *testing.T) {
	f := &callctx.Facts{Identifiers: map[string]string{callctx.KeyTeamID: "t1"}}
	c := f.CloneIdentifiers()
	c[callctx.KeyTeamID] = "changed"
	c[callctx.KeyOrgID] = "o1"
	if f.ID(callctx.KeyTeamID) != "t1" || f.ID(callctx.KeyOrgID) != "" {
		t.Errorf("changing the clone changed the facts: %v", f.Identifiers)
	}
}

func TestTransport(t *testing.T) {
	ctx := t.Context()
	if got := callctx.TransportOf(ctx); got != callctx.TransportGRPC {
		t.Errorf("a call without a mark is %q, want grpc (network callers cannot set context values)", got)
	}
	if got := callctx.TransportOf(callctx.WithTransport(ctx, callctx.TransportMCP)); got != callctx.TransportMCP {
		t.Errorf("TransportOf = %q, want mcp", got)
	}
	if got := callctx.TransportOf(callctx.WithTransport(ctx, "")); got != callctx.TransportGRPC {
		t.Errorf("an empty mark is %q, want grpc", got)
	}
}

func TestProgress(t *testing.T) {
	callctx.Progress(t.Context(), 1, 2, "no reporter: nothing happens")
	callctx.Progress(callctx.WithProgress(t.Context(), nil), 1, 2, "a nil reporter is ignored")

	type report struct {
		done, total float64
		msg         string
	}
	var got []report
	ctx := callctx.WithProgress(t.Context(), func(done, total float64, msg string) {
		got = append(got, report{done, total, msg})
	})
	callctx.Progress(ctx, 1, 3, "one")
	callctx.Progress(context.WithoutCancel(ctx), 3, 3, "done")
	if len(got) != 2 || got[0] != (report{1, 3, "one"}) || got[1] != (report{3, 3, "done"}) {
		t.Errorf("reports = %v", got)
	}
}

type askerFunc func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

func (f askerFunc) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return f(ctx, method, params)
}

func TestAsk(t *testing.T) {
	if _, err := callctx.Ask(t.Context(), "elicitation/create", nil); !errors.Is(err, callctx.ErrCannotAsk) {
		t.Fatalf("no asker: err = %v, want ErrCannotAsk", err)
	}
	ctx := callctx.WithAsker(t.Context(), askerFunc(func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"method":"` + method + `","params":` + string(params) + `}`), nil
	}))
	got, err := callctx.Ask(ctx, "sampling/createMessage", json.RawMessage(`{"maxTokens":5}`))
	if err != nil || string(got) != `{"method":"sampling/createMessage","params":{"maxTokens":5}}` {
		t.Fatalf("Ask = %s, %v", got, err)
	}
}
