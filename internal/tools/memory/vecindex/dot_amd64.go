package vecindex

import "golang.org/x/sys/cpu"

// haveFMA selects the assembly inner product (dot_amd64.s); without AVX2
// and FMA the portable one serves.
var haveFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotFMA is the inner product of a and b[:len(a)] with AVX2 and FMA;
// b must be at least as long as a.
//
//go:noescape
func dotFMA(a, b []float32) float32

// dotCodesAVX2 is the product of the codes a and c[:len(a)] with AVX2;
// len(a) must be a multiple of 32 and c at least as long.
//
//go:noescape
func dotCodesAVX2(a []int16, c []int8) int32
