#include "textflag.h"

// func dotFMA(a, b []float32) float32
//
// The inner product of a and b[:len(a)] with AVX2 and FMA: four 8-lane
// accumulators over 32 floats a step, then 8 at a time, then one by one.
TEXT ·dotFMA(SB), NOSPLIT, $0-52
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

loop32:
	CMPQ        CX, $32
	JL          loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         loop32

loop8:
	CMPQ        CX, $8
	JL          reduce
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         loop8

reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

loop1:
	TESTQ       CX, CX
	JE          done
	VMOVSS      (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         loop1

done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func dotCodesAVX2(a []int16, c []int8) int32
//
// The product of the 16-bit codes a and the 8-bit codes c[:len(a)],
// len(a) a multiple of 32, with AVX2: each step widens 16 codes of c to
// 16 bits (VPMOVSXBW) and multiplies them with 16 of a, adding pairs into
// eight 32-bit lanes (VPMADDWD); two accumulators over 32 codes a step.
// The sum is exact (the caller keeps it within an int32).
TEXT ·dotCodesAVX2(SB), NOSPLIT, $0-52
	MOVQ  a_base+0(FP), SI
	MOVQ  a_len+8(FP), CX
	MOVQ  c_base+24(FP), DI
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

codes32:
	CMPQ      CX, $32
	JL        codesReduce
	VPMOVSXBW (DI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD  (SI), Y4, Y4
	VPMADDWD  32(SI), Y5, Y5
	VPADDD    Y4, Y0, Y0
	VPADDD    Y5, Y1, Y1
	ADDQ      $64, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JMP       codes32

codesReduce:
	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPHADDD      X0, X0, X0
	VPHADDD      X0, X0, X0
	VZEROUPPER
	MOVL         X0, ret+48(FP)
	RET
