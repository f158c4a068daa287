package memory

import (
	"context"
	"math"
	"testing"
)

type floorEmbedder struct {
	Embedder
	floor float64
}

func (f floorEmbedder) SimilarityFloor() float64 { return f.floor }

func TestCalibrate(t *testing.T) {
	tests := []struct{ cos, floor, want float64 }{
		{0.8, 0, 0.8}, // no floor: the similarity as it is
		{0.3, 0.3, 0}, // at the floor: unrelated
		{0.1, 0.3, 0}, // below it: unrelated, never negative
		{1, 0.3, 1},   // identical
		{0.65, 0.3, 0.5},
		{0.93, 0.3, 0.9},
	}
	for _, tc := range tests {
		if got := calibrate(tc.cos, tc.floor); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("calibrate(%v, %v) = %v, want %v", tc.cos, tc.floor, got, tc.want)
		}
	}
	for _, tc := range []struct {
		e    Embedder
		want float64
	}{
		{floorEmbedder{floor: 0.31}, 0.31},
		{floorEmbedder{floor: -1}, 0},
		{floorEmbedder{floor: math.NaN()}, 0},
		{floorEmbedder{floor: 0.99}, maxSimilarityFloor},
		{embedderFunc(nil), 0}, // not Calibrated
	} {
		if got := similarityFloor(tc.e); got != tc.want {
			t.Errorf("similarityFloor(%T %v) = %v, want %v", tc.e, tc.e, got, tc.want)
		}
	}
}

type embedderFunc func(context.Context, []string) ([][]float32, error)

func (f embedderFunc) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return f(ctx, texts)
}
