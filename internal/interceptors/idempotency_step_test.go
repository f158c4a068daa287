package interceptors_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

type idemEnv struct {
	step grpc.UnaryServerInterceptor
	next *fakeNext
	runs int
}

func newIdemEnv(t *testing.T) *idemEnv {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "keys.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	env := &idemEnv{step: interceptors.IdempotentStep(st, time.Hour)}
	env.next = &fakeNext{resp: func(ctx context.Context, req any) (any, error) {
		env.runs++
		return goodAdd(ctx, req.(*memoryv1.AddMemoryRequest))
	}}
	return env
}

func (e *idemEnv) call(tool *registry.Tool, p *auth.Principal, key, content string) (*interceptors.Call, any, error) {
	req := &memoryv1.AddMemoryRequest{Content: content}
	c := &interceptors.Call{Tool: tool, Principal: p, Request: req}
	if key != "" {
		interceptors.SetMetadata(c, metadata.Pairs(wire.HeaderIdempotencyKey, key))
	}
	out, err := runStep(context.Background(), e.step, c, req, e.next)
	return c, out, err
}

func TestIdempotencyRepeatReplaysTheFirstResult(t *testing.T) {
	env := newIdemEnv(t)
	add := memTool(t, addMethod, nil)
	c1, first, err := env.call(add, fullPrincipal(), "k-1", "deploys need a ticket")
	if err != nil {
		t.Fatal(err)
	}
	c2, second, err := env.call(add, fullPrincipal(), "k-1", "deploys need a ticket")
	if err != nil {
		t.Fatal(err)
	}
	if env.runs != 1 {
		t.Fatalf("tool ran %d times, want once", env.runs)
	}
	if c1.Replayed || !c2.Replayed || c2.IdempotencyKey != "k-1" {
		t.Errorf("replayed %v then %v, key %q; want false, true, k-1", c1.Replayed, c2.Replayed, c2.IdempotencyKey)
	}
	id1, id2 := first.(*memoryv1.AddMemoryResponse).GetData().GetMemoryId(), second.(*memoryv1.AddMemoryResponse).GetData().GetMemoryId()
	if id1 == "" || id1 != id2 {
		t.Errorf("memory ids %q and %q, want the first answer replayed", id1, id2)
	}

	// The key is the principal's: another caller's same key runs.
	other := fullPrincipal()
	other.Subject = "bob"
	if c, _, err := env.call(add, other, "k-1", "deploys need a ticket"); err != nil || c.Replayed {
		t.Fatalf("other principal: err %v replayed %v", err, c.Replayed)
	}
	if env.runs != 2 {
		t.Errorf("tool ran %d times, want 2", env.runs)
	}
}

func TestIdempotencyKeyReusedWithOtherArgumentsConflicts(t *testing.T) {
	env := newIdemEnv(t)
	add := memTool(t, addMethod, nil)
	if _, _, err := env.call(add, fullPrincipal(), "k-2", "first"); err != nil {
		t.Fatal(err)
	}
	_, out, err := env.call(add, fullPrincipal(), "k-2", "second")
	e := wantCode(t, err, toolerr.Conflict)
	if !e.Final || e.Details["tool"] != add.Name || e.Details["firstUsedAt"] == nil {
		t.Errorf("conflict %+v: want final, naming the tool and first use", e)
	}
	if out != nil || env.runs != 1 {
		t.Errorf("out %v, tool ran %d times; want no answer and one run", out, env.runs)
	}
}

func TestIdempotencyKeyFormat(t *testing.T) {
	env := newIdemEnv(t)
	for _, bad := range []string{"has space", string(make([]byte, interceptors.MaxIdempotencyKeyLen+1))} {
		_, _, err := env.call(memTool(t, addMethod, nil), fullPrincipal(), bad, "x")
		e := wantCode(t, err, toolerr.InvalidInput)
		if len(e.Violations) != 1 || e.Violations[0].GetField() != "Idempotency-Key" {
			t.Errorf("violations %v, want Idempotency-Key", e.Violations)
		}
	}
	if env.runs != 0 {
		t.Errorf("tool ran %d times with a bad key", env.runs)
	}
}

func TestIdempotencyOnlyForMutations(t *testing.T) {
	env := newIdemEnv(t)
	// A query with a key: the key is reported, the tool runs every time.
	query := memTool(t, addMethod, func(tl *registry.Tool) { tl.Spec.SideEffect, tl.Spec.Destructive = false, false })
	for i := 0; i < 2; i++ {
		c, _, err := env.call(query, fullPrincipal(), "k-3", "x")
		if err != nil || c.Replayed || c.IdempotencyKey != "k-3" {
			t.Fatalf("call %d: err %v replayed %v key %q", i, err, c.Replayed, c.IdempotencyKey)
		}
	}
	// No key: no bookkeeping.
	add := memTool(t, addMethod, nil)
	for i := 0; i < 2; i++ {
		if c, _, err := env.call(add, fullPrincipal(), "", "x"); err != nil || c.Replayed {
			t.Fatalf("unkeyed call %d: err %v replayed %v", i, err, c.Replayed)
		}
	}
	if env.runs != 4 {
		t.Errorf("tool ran %d times, want 4", env.runs)
	}
}
