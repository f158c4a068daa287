package store_test

import (
	"errors"
	"io"
	"regexp"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

func TestLayerPrecedence(t *testing.T) {
	tests := []struct {
		name  string
		layer store.Layer
		want  int
	}{
		{name: "agent is highest", layer: store.LayerAgent, want: 0},
		{name: "session", layer: store.LayerSession, want: 2},
		{name: "company is lowest", layer: store.LayerCompany, want: 6},
		{name: "unknown", layer: "galaxy", want: -1},
		{name: "empty", layer: "", want: -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.layer.Precedence(); got != tc.want {
				t.Errorf("Precedence() = %d, want %d", got, tc.want)
			}
			if got := tc.layer.Valid(); got != (tc.want >= 0) {
				t.Errorf("Valid() = %v", got)
			}
		})
	}
}

func TestUnavailableError(t *testing.T) {
	err := error(&store.UnavailableError{Op: "AddMemory", Err: io.ErrUnexpectedEOF})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("errors.Is does not reach the cause")
	}
	if got, want := err.Error(), "store: AddMemory: backend unavailable: unexpected EOF"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestNewMemoryID(t *testing.T) {
	re := regexp.MustCompile(`^mem_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	prev := ""
	for range 1000 {
		id := store.NewMemoryID()
		if !re.MatchString(id) || seen[id] {
			t.Fatalf("bad or repeated ID %q", id)
		}
		if id <= prev {
			t.Fatalf("IDs not increasing: %q after %q", id, prev)
		}
		seen[id], prev = true, id
	}
}

func TestFairCap(t *testing.T) {
	tests := []struct {
		name  string
		uses  []int64
		total int64
		want  int64
	}{
		{name: "everyone fits", uses: []int64{1, 2, 3}, total: 10, want: 10},
		{name: "one over", uses: []int64{1, 2, 30}, total: 10, want: 7},
		{name: "two over", uses: []int64{1, 20, 30}, total: 10, want: 4},
		{name: "all over", uses: []int64{20, 20, 30}, total: 12, want: 4},
		{name: "none", uses: nil, total: 10, want: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := store.FairCap(tc.uses, tc.total); got != tc.want {
				t.Errorf("FairCap(%v, %d) = %d, want %d", tc.uses, tc.total, got, tc.want)
			}
		})
	}
}
