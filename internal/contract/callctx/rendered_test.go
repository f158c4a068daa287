package callctx_test

import (
	"context"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
)

// TestRenderSlotFirstClaimOwns: the first call to claim a slot owns it; a
// call made in turn with the same context cannot claim it.
func TestRenderSlotFirstClaimOwns(t *testing.T) {
	s := &callctx.RenderSlot{}
	ctx := callctx.WithRenderSlot(context.Background(), s)
	if callctx.RenderSlotFrom(ctx) != s || callctx.RenderSlotFrom(context.Background()) != nil {
		t.Fatal("RenderSlotFrom does not return the slot the context carries")
	}
	outer, inner := new(int), new(int)
	if !s.Claim(outer) {
		t.Fatal("first claim refused")
	}
	if s.Claim(inner) {
		t.Fatal("a second caller claimed the slot")
	}
	if !s.Claim(outer) {
		t.Fatal("the owner's claim refused")
	}
	if s.Rendered() != nil {
		t.Fatal("an unfilled slot has a rendering")
	}
	r := &callctx.Rendered{}
	s.Fill(r)
	if s.Rendered() != r {
		t.Fatal("Fill lost the rendering")
	}
	if got := r.Store("x", 1); got != 1 {
		t.Fatalf("Store = %v", got)
	}
	if got := r.Store("x", 2); got != 1 {
		t.Fatalf("second Store = %v, want the first kept", got)
	}
	if v, ok := r.Load("x"); !ok || v != 1 {
		t.Fatalf("Load = %v, %v", v, ok)
	}
}
