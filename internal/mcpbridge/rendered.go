package mcpbridge

import (
	"encoding/base64"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/toolsvc/toolsvc/internal/contract/callctx"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// renderingMCP names the bridge's rendering in a callctx.Rendered.
const renderingMCP = "mcp.result"

// cachedParts is the result JSON of a cached result around its metadata,
// the one part the chain sets per call: head is everything before the
// metadata's value, tail everything after. ok is false when appendResult
// does not render the message (protojson does, on every call).
type cachedParts struct {
	desc       protoreflect.MessageDescriptor
	head, tail []byte
	ok         bool
}

// marshalOnce renders out, the result of a call made with slot in its
// context, as marshalResult does. When the chain answered from its cache,
// it reuses the rendering of the same cached result made for an earlier
// call and renders only this call's metadata into it.
func marshalOnce(slot *callctx.RenderSlot, out proto.Message) (result []byte, buf *[]byte, err error) {
	if r := slot.Rendered(); r != nil {
		if result, buf, ok := marshalCached(r, out); ok {
			return result, buf, nil
		}
	}
	return marshalResult(out)
}

// marshalCached renders out from r's parts (made from out the first
// time) and out's metadata; ok is false when it cannot, and out must be
// rendered whole.
func marshalCached(r *callctx.Rendered, out proto.Message) (result []byte, buf *[]byte, ok bool) {
	pr := out.ProtoReflect()
	meta := pr.Descriptor().Fields().ByName("metadata")
	if meta == nil || meta.Message() == nil || !pr.Has(meta) {
		return nil, nil, false
	}
	v, found := r.Load(renderingMCP)
	if !found {
		v = r.Store(renderingMCP, splitResult(pr, meta))
	}
	p := v.(*cachedParts)
	// Another descriptor of the type (an upstream's contracts read again
	// while the call was on its way) renders whole.
	if !p.ok || p.desc != pr.Descriptor() {
		return nil, nil, false
	}
	buf = scratch.Get().(*[]byte)
	b := (*buf)[:0]
	b = append(b, p.head...)
	b, err := appendMessage(b, pr.Get(meta).Message())
	if err != nil {
		scratch.Put(buf)
		return nil, nil, false
	}
	b = append(b, p.tail...)
	if cap(b) <= 64<<10 { // as marshalResult
		*buf = b
	}
	return b, buf, true
}

// resultSplits counts splitResult's renderings (read by tests: a cached
// result is rendered once).
var resultSplits atomic.Int64

// splitResult renders m and cuts it around the value of its field meta.
func splitResult(m protoreflect.Message, meta protoreflect.FieldDescriptor) *cachedParts {
	resultSplits.Add(1)
	b, start, end, err := appendFields(nil, m, meta)
	if err != nil || start < 0 || end < start {
		return &cachedParts{desc: m.Descriptor()}
	}
	return &cachedParts{desc: m.Descriptor(), head: b[:start:start], tail: b[end:], ok: true}
}

// scratch holds the buffers results are rendered into before
// toolResult copies them (twice) into the response: reused, they spare
// protojson growing a new buffer on every call.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// marshalResult renders m as resultJSON would (appendResult, or
// protojson for what that leaves to it) into a scratch buffer (*buf,
// which the caller returns to scratch once done with the result).
func marshalResult(m proto.Message) (result []byte, buf *[]byte, err error) {
	buf = scratch.Get().(*[]byte)
	b, ok := appendResult((*buf)[:0], m.ProtoReflect())
	if !ok {
		b, err = resultJSON.MarshalAppend((*buf)[:0], m)
	}
	if err != nil {
		scratch.Put(buf)
		return nil, nil, status.Error(toolerr.Internal.GRPCCode(), "internal error: result is not serializable")
	}
	if cap(b) <= 64<<10 { // a huge result's buffer is left to the GC
		*buf = b
	}
	return b, buf, nil
}

// appendResult appends the JSON of m as resultJSON (protojson with
// EmitDefaultValues) renders it: the same members in the same order, the
// same values, without protojson's reflection per field (it ranges and
// sorts a message's fields on every call, half of a call's cost in the
// bridge). ok is false for what it does not render itself (Any,
// FieldMask, extensions, values protojson refuses): the caller then uses
// protojson, so the output never differs.
func appendResult(b []byte, m protoreflect.Message) (_ []byte, ok bool) {
	b, err := appendMessage(b, m)
	return b, err == nil
}

// errFallback sends a message to protojson.
var errFallback = errors.New("rendered by protojson")

func appendMessage(b []byte, m protoreflect.Message) ([]byte, error) {
	b, _, _, err := appendFields(b, m, nil)
	return b, err
}

// appendFields is appendMessage, which also returns where the value of
// field cut (nil: none) begins and ends in b (-1 when not written).
func appendFields(b []byte, m protoreflect.Message, cut protoreflect.FieldDescriptor) (_ []byte, start, end int, err error) {
	start, end = -1, -1
	md := m.Descriptor()
	if md.FullName().Parent() == "google.protobuf" {
		b, err = appendWellKnown(b, m)
		return b, start, end, err
	}
	b = append(b, '{')
	fds := md.Fields()
	first := true
	for i := range fds.Len() {
		fd := fds.Get(i)
		if fd.IsExtension() {
			return nil, start, end, errFallback
		}
		has := m.Has(fd)
		// As protojson's EmitDefaultValues: unset oneof members and
		// fields with presence are left out, other unset fields written
		// with their zero value.
		if !has && (fd.ContainingOneof() != nil || fd.HasPresence()) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = framing.AppendJSONString(b, fd.JSONName())
		b = append(b, ':')
		if fd == cut {
			start = len(b)
		}
		switch {
		case fd.IsList():
			b, err = appendList(b, m.Get(fd).List(), fd)
		case fd.IsMap():
			b, err = appendMap(b, m.Get(fd).Map(), fd)
		default:
			b, err = appendSingular(b, m.Get(fd), fd)
		}
		if err != nil {
			return nil, start, end, err
		}
		if fd == cut {
			end = len(b)
		}
	}
	return append(b, '}'), start, end, nil
}

func appendList(b []byte, l protoreflect.List, fd protoreflect.FieldDescriptor) ([]byte, error) {
	b = append(b, '[')
	for i := range l.Len() {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendSingular(b, l.Get(i), fd); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendMap writes a map's entries in protojson's order: keys sorted (false
// before true, numbers by value, strings by bytes).
func appendMap(b []byte, mp protoreflect.Map, fd protoreflect.FieldDescriptor) ([]byte, error) {
	keys := make([]protoreflect.MapKey, 0, mp.Len())
	mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, func(x, y protoreflect.MapKey) int {
		switch xv := x.Interface().(type) {
		case bool:
			if xv == y.Bool() {
				return 0
			} else if !xv {
				return -1
			}
			return 1
		case int32, int64:
			return cmpInt(x.Int(), y.Int())
		case uint32, uint64:
			return cmpInt(x.Uint(), y.Uint())
		}
		return strings.Compare(x.String(), y.String())
	})
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if !utf8.ValidString(k.String()) {
			return nil, errFallback
		}
		b = framing.AppendJSONString(b, k.String())
		b = append(b, ':')
		var err error
		if b, err = appendSingular(b, mp.Get(k), fd.MapValue()); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func cmpInt[T int64 | uint64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func appendSingular(b []byte, v protoreflect.Value, fd protoreflect.FieldDescriptor) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.StringKind:
		s := v.String()
		if !utf8.ValidString(s) {
			return nil, errFallback // protojson refuses it
		}
		return framing.AppendJSONString(b, s), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		// 64-bit integers are JSON strings.
		b = append(b, '"')
		return append(strconv.AppendInt(b, v.Int(), 10), '"'), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		b = append(b, '"')
		return append(strconv.AppendUint(b, v.Uint(), 10), '"'), nil
	case protoreflect.FloatKind:
		return appendFloat(b, v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64), nil
	case protoreflect.BytesKind:
		b = append(b, '"')
		return append(base64.StdEncoding.AppendEncode(b, v.Bytes()), '"'), nil
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return append(b, "null"...), nil
		}
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return framing.AppendJSONString(b, string(ev.Name())), nil
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), nil
	case protoreflect.MessageKind:
		return appendMessage(b, v.Message())
	}
	return nil, errFallback // groups
}

// appendWellKnown renders the well-known types results use; the others go
// to protojson.
func appendWellKnown(b []byte, m protoreflect.Message) ([]byte, error) {
	md := m.Descriptor()
	fds := md.Fields()
	switch md.Name() {
	case "Timestamp":
		secs, nanos := m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int()
		// protojson's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
		if secs < -62135596800 || secs > 253402300799 || nanos < 0 || nanos >= 1e9 {
			return nil, errFallback
		}
		t := time.Unix(secs, nanos).UTC()
		b = append(b, '"')
		b = t.AppendFormat(b, "2006-01-02T15:04:05")
		b = appendNanos(b, nanos)
		return append(b, 'Z', '"'), nil
	case "Duration":
		secs, nanos := m.Get(fds.ByNumber(1)).Int(), m.Get(fds.ByNumber(2)).Int()
		if secs < -315576000000 || secs > 315576000000 || nanos <= -1e9 || nanos >= 1e9 || (secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
			return nil, errFallback
		}
		b = append(b, '"')
		if secs < 0 || nanos < 0 {
			b, secs, nanos = append(b, '-'), -secs, -nanos
		}
		b = strconv.AppendInt(b, secs, 10)
		b = appendNanos(b, nanos)
		return append(b, 's', '"'), nil
	case "Struct":
		return appendMap(b, m.Get(fds.ByNumber(1)).Map(), fds.ByNumber(1))
	case "ListValue":
		return appendList(b, m.Get(fds.ByNumber(1)).List(), fds.ByNumber(1))
	case "Value":
		fd := m.WhichOneof(md.Oneofs().ByName("kind"))
		if fd == nil {
			return nil, errFallback // protojson refuses an empty Value
		}
		v := m.Get(fd)
		if fd.Kind() == protoreflect.DoubleKind && (math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0)) {
			return nil, errFallback
		}
		return appendSingular(b, v, fd)
	case "Empty":
		return append(b, '{', '}'), nil
	case "DoubleValue", "FloatValue", "Int64Value", "UInt64Value", "Int32Value", "UInt32Value", "BoolValue", "StringValue", "BytesValue":
		fd := fds.ByNumber(1)
		return appendSingular(b, m.Get(fd), fd)
	}
	return nil, errFallback
}

// appendNanos appends the fraction of a second with 0, 3, 6 or 9 digits,
// as protojson writes Timestamp and Duration.
func appendNanos(b []byte, nanos int64) []byte {
	if nanos == 0 {
		return b
	}
	digits := 9
	for digits > 3 && nanos%1000 == 0 {
		nanos /= 1000
		digits -= 3
	}
	b = append(b, '.')
	s := strconv.AppendInt(nil, nanos, 10)
	for range digits - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

// appendFloat writes a number as protojson does (the special values as
// strings, exponents for very small and very large magnitudes).
func appendFloat(b []byte, n float64, bitSize int) []byte {
	switch {
	case math.IsNaN(n):
		return append(b, `"NaN"`...)
	case math.IsInf(n, +1):
		return append(b, `"Infinity"`...)
	case math.IsInf(n, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(n); abs != 0 {
		if bitSize == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bitSize == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, n, format, -1, bitSize)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
