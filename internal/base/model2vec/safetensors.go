package model2vec

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// maxHeader bounds the JSON header of a safetensors file (the format's own
// limit is 100 MB; a model2vec header is a few hundred bytes).
const maxHeader = 1 << 20

// tensor is one decoded tensor, widened to float32.
type tensor struct {
	shape  []int
	values []float32
}

type tensorInfo struct {
	DType   string  `json:"dtype"`
	Shape   []int   `json:"shape"`
	Offsets [2]uint `json:"data_offsets"`
}

// parseSafetensors decodes a safetensors file: an 8-byte little-endian
// header length, a JSON header naming each tensor's dtype, shape and byte
// range, then the data. Every range is checked against the file and the
// shape before any value is read.
func parseSafetensors(b []byte) (map[string]tensor, error) {
	if len(b) < 8 {
		return nil, errors.New("model2vec: model.safetensors is too short")
	}
	n := binary.LittleEndian.Uint64(b)
	if n == 0 || n > maxHeader || n > uint64(len(b)-8) {
		return nil, fmt.Errorf("model2vec: model.safetensors header length %d is not valid", n)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		return nil, fmt.Errorf("model2vec: model.safetensors header: %w", err)
	}
	data := b[8+n:]
	out := map[string]tensor{}
	for name, raw := range header {
		if name == "__metadata__" {
			continue
		}
		var ti tensorInfo
		if err := json.Unmarshal(raw, &ti); err != nil {
			return nil, fmt.Errorf("model2vec: tensor %q: %w", name, err)
		}
		t, err := decodeTensor(ti, data)
		if err != nil {
			return nil, fmt.Errorf("model2vec: tensor %q: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

func decodeTensor(ti tensorInfo, data []byte) (tensor, error) {
	count := 1
	for _, d := range ti.Shape {
		if d < 0 || (d > 0 && count > math.MaxInt32/d) {
			return tensor{}, fmt.Errorf("shape %v is not valid", ti.Shape)
		}
		count *= d
	}
	size := map[string]int{"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8}[ti.DType]
	if size == 0 {
		return tensor{}, fmt.Errorf("dtype %q is not supported (F32, F16, BF16, I32, I64 are)", ti.DType)
	}
	start, end := ti.Offsets[0], ti.Offsets[1]
	if start > end || end > uint(len(data)) || end-start != uint(count*size) {
		return tensor{}, fmt.Errorf("data offsets %v do not hold %d values of %s in %d bytes", ti.Offsets, count, ti.DType, len(data))
	}
	raw := data[start:end]
	vals := make([]float32, count)
	for i := range vals {
		p := raw[i*size:]
		switch ti.DType {
		case "F32":
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(p))
		case "F16":
			vals[i] = halfToFloat(binary.LittleEndian.Uint16(p))
		case "BF16":
			vals[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(p)) << 16)
		case "I32":
			vals[i] = float32(int32(binary.LittleEndian.Uint32(p)))
		case "I64":
			vals[i] = float32(int64(binary.LittleEndian.Uint64(p)))
		}
	}
	return tensor{shape: ti.Shape, values: vals}, nil
}

// halfToFloat widens an IEEE 754 half-precision value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		frac &= 0x3ff
		return math.Float32frombits(sign | e<<23 | frac<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	default:
		return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
	}
}
