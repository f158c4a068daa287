package traceparent_test

import (
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/traceparent"
)

const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestTraceID(t *testing.T) {
	tests := []struct {
		header, want string
		ok           bool
	}{
		{valid, "4bf92f3577b34da6a3ce929d0e0e4736", true},
		{"", "", false},
		{strings.ToUpper(valid), "", false}, // upper-case hex
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "", false},  // all-zero trace id
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", "", false}, // too long
		{"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "", false},  // separator
		{"00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01", "", false},  // not hex
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01", "", false},  // parent not hex
	}
	for _, tc := range tests {
		got, ok := traceparent.TraceID(tc.header)
		if got != tc.want || ok != tc.ok {
			t.Errorf("TraceID(%q) = %q, %v; want %q, %v", tc.header, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTraceIDOrNewAndChild(t *testing.T) {
	if got := traceparent.TraceIDOrNew(valid); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("TraceIDOrNew(valid) = %q", got)
	}
	a, b := traceparent.TraceIDOrNew("junk"), traceparent.TraceIDOrNew("junk")
	if a == b || len(a) != 32 {
		t.Fatalf("new trace ids %q, %q: want two different 32-digit ids", a, b)
	}
	child := traceparent.Child(a)
	if id, ok := traceparent.TraceID(child); !ok || id != a || !strings.HasSuffix(child, "-01") {
		t.Fatalf("Child(%q) = %q: not a sampled traceparent of that trace", a, child)
	}
	if child == traceparent.Child(a) {
		t.Fatal("two children share a parent id")
	}
	for _, bad := range []string{"", "abc", strings.Repeat("0", 32), strings.Repeat("G", 32)} {
		if got := traceparent.Child(bad); got != "" {
			t.Errorf("Child(%q) = %q, want empty", bad, got)
		}
	}
}
