// Package traceparent reads and writes the W3C Trace Context traceparent
// header (version-traceid-parentid-flags) where toolsvc needs its trace id
// without a tracer: the chain names every call's trace, the REST gateway
// the errors it raises itself, and an upstream call continues the trace.
// With tracing on, spans come from OpenTelemetry's propagator instead.
//
// Hand-written rather than OpenTelemetry's propagation.TraceContext: the
// chain reads the header on every call, and the propagator needs a
// context, a carrier and a SpanContext to yield the 32 characters the chain
// keeps (docs/BENCHMARKS.md, "Traceparent").
package traceparent

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
)

// Len is the length of a version-00 traceparent.
const Len = 55

// zeroTraceID is W3C's invalid all-zero trace id.
const zeroTraceID = "00000000000000000000000000000000"

// TraceID returns the trace id of header, a version-00 traceparent, and
// whether it had a valid one (32 lower-case hex digits, not all zero).
func TraceID(header string) (string, bool) {
	if len(header) != Len || header[2] != '-' || header[35] != '-' || header[52] != '-' {
		return "", false
	}
	id := header[3:35]
	if !isHex(id) || id == zeroTraceID || !isHex(header[:2]) || !isHex(header[36:52]) || !isHex(header[53:]) {
		return "", false
	}
	return id, true
}

// TraceIDOrNew is header's trace id, or a new random one.
func TraceIDOrNew(header string) string {
	if id, ok := TraceID(header); ok {
		return id
	}
	return NewTraceID()
}

// NewTraceID is a random trace id. Trace ids must be unique, not secret (a
// caller may choose its own), so math/rand/v2's per-thread generator
// serves: crypto/rand would cost a tenth of the chain's call set-up.
func NewTraceID() string {
	b := RandomID()
	return hex.EncodeToString(b[:])
}

// RandomID is 16 random bytes (see NewTraceID for why not crypto/rand).
func RandomID() [16]byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return b
}

// Child is a traceparent continuing traceID with a new random parent id,
// sampled; "" when traceID is not a valid trace id.
func Child(traceID string) string {
	if len(traceID) != 32 || !isHex(traceID) || traceID == zeroTraceID {
		return ""
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], rand.Uint64()|1) // never the invalid all-zero parent id
	return "00-" + traceID + "-" + hex.EncodeToString(b[:]) + "-01"
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
