package synthetic

import (
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		wantErr bool
	}{
		{name: "ten tools", n: 10},
		{name: "odd", n: 3, wantErr: true},
		{name: "zero", n: 0, wantErr: true},
		{name: "too many", n: MaxTools + 2, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Registry(tt.n)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if r.Len() != tt.n {
				t.Fatalf("%d tools, want %d", r.Len(), tt.n)
			}
			got, err := r.Get("get-sync-status-00004", "")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got.FullMethod, "/bench.synth00004.v1.") || got.InputSchema == nil {
				t.Errorf("tool %+v has no renamed method or schema", got.FullMethod)
			}
		})
	}
}
