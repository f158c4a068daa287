//go:build !amd64

package vecindex

const haveFMA = false

func dotFMA(a, b []float32) float32 { panic("vecindex: no FMA inner product on this architecture") }
