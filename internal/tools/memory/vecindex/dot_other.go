//go:build !amd64

package vecindex

const haveFMA = false

func dotFMA(a, b []float32) float32 { panic("vecindex: no FMA inner product on this architecture") }

func dotCodesAVX2(a []int16, c []int8) int32 {
	panic("vecindex: no AVX2 product of codes on this architecture")
}
