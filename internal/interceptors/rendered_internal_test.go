package interceptors

import (
	"strconv"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
)

// TestRenderingsByValue: one Rendered per tool and value, a new value a
// new one, and the memory bounded by two generations.
func TestRenderingsByValue(t *testing.T) {
	r := newRenderings(100)
	a, b := renderedTool{tool: &registry.Tool{Name: "a"}}, renderedTool{tool: &registry.Tool{Name: "b"}}
	v := []byte("0123456789")
	first := r.get(a, v)
	if r.get(a, append([]byte(nil), v...)) != first {
		t.Fatal("the same value got another Rendered")
	}
	if r.get(b, v) == first || r.get(renderedTool{tool: a.tool, generic: true}, v) == first {
		t.Fatal("another tool (or the generic call) shares a Rendered")
	}
	if r.get(a, []byte("another value")) == first {
		t.Fatal("another value shares a Rendered")
	}
	for i := range 100 {
		r.get(a, []byte("value number "+strconv.Itoa(i)))
		if n := r.bytes; n > 100+len("value number 99") {
			t.Fatalf("%d bytes kept, budget 100", n)
		}
	}
	if len(r.cur)+len(r.old) > 2 || len(r.cur[a])+len(r.old[a]) > 2*100/len("value number 99")+2 {
		t.Fatalf("kept %d + %d values", len(r.cur[a]), len(r.old[a]))
	}
}
