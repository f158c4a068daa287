package vecindex

import "math"

// Codes: every row is also kept as 8-bit codes, its components divided
// by a scale of its own (its largest component / 127) and rounded, with
// its radius, the distance between the row and its codes times the
// scale. A search turns its unit query into 16-bit codes the same way
// (queryCodes). The integer product of the two sets of codes, times both
// scales, is within a small bound of the row's cosine (Cauchy-Schwarz:
// with q = qs·Q + dq and v = s·C + dv, |q·v - qs·s·(Q·C)| <= |q| |dv| +
// |dq| |s·C|, and |s·C| <= 1 + |dv|). A scan computes that product first,
// from a quarter of the row's bytes and in integer arithmetic, and scores
// the row exactly only when the bound says it could enter the k best
// found so far: any row it skips would not have been offered, so a search
// returns exactly what scoring every row would. Scoring rows was bound by
// memory: a 100k store's search read 11.6 MiB of floats
// (docs/BENCHMARKS.md). The codes cost dim+8 bytes a row beside the
// floats' 4·dim.

// rowCode is a row's scale and the radius of its bound.
type rowCode struct {
	scale, radius float32
}

// encode appends the codes of unit vector v to codes and returns its
// scale and radius.
func encode(codes []int8, v []float32) ([]int8, rowCode) {
	var top float32
	for _, x := range v {
		top = max(top, x, -x)
	}
	scale := top / 127
	inv := float32(0)
	if scale > 0 {
		inv = 1 / scale
	}
	var dist float64
	for _, x := range v {
		// x·inv is within [-127, 127] (up to rounding): adding 128.5 and
		// truncating rounds it to the nearest integer, halves up.
		c := max(-127, min(127, int32(x*inv+128.5)-128))
		codes = append(codes, int8(c))
		d := float64(x) - float64(scale)*float64(c)
		dist += d * d
	}
	return codes, rowCode{scale: scale, radius: roundUp(math.Sqrt(dist))}
}

// roundUp is r as a float32 no smaller than r: a radius rounded down
// would no longer bound anything.
func roundUp(r float64) float32 {
	f := float32(r)
	if float64(f) < r {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// queryCodes is a unit query as 16-bit codes: q = scale·codes + dq, with
// |dq| <= dist.
type queryCodes struct {
	codes []int16
	scale float64
	dist  float64
	// slack bounds the float32 rounding of the exact product a bound is
	// compared with, and of the query's length: each is within dim·2^-24
	// of its true value (the classic bound for a sum of dim products of
	// unit vectors); the slack allows four times that.
	slack float64
}

// encodeQuery returns the codes of unit query q. Its largest component
// becomes the largest code whose products with 8-bit codes, summed over
// the whole vector, stay within an int32 (32,767 up to 516 dimensions).
func encodeQuery(q []float32) queryCodes {
	limit := min(32767, math.MaxInt32/(127*max(1, len(q))))
	var top float64
	for _, x := range q {
		top = max(top, math.Abs(float64(x)))
	}
	qc := queryCodes{codes: make([]int16, len(q)), slack: float64(len(q)) * 0x1p-21}
	if top == 0 {
		return qc
	}
	qc.scale = top / float64(limit)
	var dist float64
	for i, x := range q {
		c := max(-float64(limit), min(float64(limit), math.Round(float64(x)/qc.scale)))
		qc.codes[i] = int16(c)
		d := float64(x) - qc.scale*c
		dist += d * d
	}
	qc.dist = float64(roundUp(math.Sqrt(dist)))
	return qc
}

// bound is an upper bound of the cosine of the row with codes c and rc.
func (qc *queryCodes) bound(c []int8, rc rowCode) float64 {
	r := float64(rc.radius)
	return float64(dotCodes(qc.codes, c))*qc.scale*float64(rc.scale) + r + qc.dist*(1+r) + qc.slack
}

// dotCodes is the product of the query codes a and the row codes
// c[:len(a)], exact: in assembly where the CPU has AVX2 and len(a) is a
// multiple of 32, in Go elsewhere. encodeQuery keeps the sum within an
// int32.
func dotCodes(a []int16, c []int8) int32 {
	if haveFMA && len(a)%32 == 0 {
		return dotCodesAVX2(a, c[:len(a)])
	}
	return dotCodesGo(a, c)
}

// dotCodesGo is the portable dotCodes.
func dotCodesGo(a []int16, c []int8) int32 {
	c = c[:len(a)]
	var s0, s1 int32
	i := 0
	for ; i+2 <= len(a); i += 2 {
		s0 += int32(a[i]) * int32(c[i])
		s1 += int32(a[i+1]) * int32(c[i+1])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(c[i])
	}
	return s0 + s1
}

// offerRow offers row i of p to top with its exact cosine with the unit
// query q (codes qc), unless the row's codes show it cannot enter top:
// its cosine's upper bound is below the worst of a full top.
func offerRow(p *partition, q []float32, qc *queryCodes, dim, i int, top *topK) {
	if len(top.h) == top.k && qc.bound(p.codes[i*dim:(i+1)*dim], p.rc[i]) < top.h[0].Cosine {
		return
	}
	s := dot(q, p.vecs[i*dim:(i+1)*dim])
	if len(top.h) < top.k || s > top.h[0].Cosine || (s == top.h[0].Cosine && p.ids[i] < top.h[0].ID) {
		top.offer(Hit{ID: p.ids[i], Cosine: s})
	}
}
