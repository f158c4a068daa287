package paging

import (
	"encoding/binary"
	"errors"
	"math"
)

// A tool encodes its result set's items (paging.Save keeps them opaque)
// with Append* and reads them back with a Reader: uvarints, strings,
// float64s and bytes, in the order the tool wrote them.

// AppendUint appends v as a uvarint.
func AppendUint(b []byte, v int) []byte { return binary.AppendUvarint(b, uint64(v)) }

// AppendString appends s, its length first.
func AppendString(b []byte, s string) []byte { return append(AppendUint(b, len(s)), s...) }

// AppendFloat appends f in 8 bytes.
func AppendFloat(b []byte, f float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(f))
}

// ErrBadItems reports a result set that does not decode: the store gave
// back other bytes than the tool saved.
var ErrBadItems = errors.New("paging: a saved result set does not decode")

// Reader reads what Append* wrote. After the first short or malformed
// read every read returns zero and Err reports ErrBadItems.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err is ErrBadItems once a read failed, else nil.
func (r *Reader) Err() error { return r.err }

// Uint reads a uvarint of at most max (a count a set cannot exceed).
func (r *Reader) Uint(max int) int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > uint64(max) {
		r.err = ErrBadItems
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

// String reads a string.
func (r *Reader) String() string {
	n := r.Uint(len(r.b))
	if r.err != nil || n > len(r.b) {
		r.err = ErrBadItems
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// Float reads a float64.
func (r *Reader) Float() float64 {
	if r.err != nil || len(r.b) < 8 {
		r.err = ErrBadItems
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return f
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = ErrBadItems
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}
