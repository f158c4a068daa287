package mcpbridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// sameJSON reports whether a and b are the same JSON value, numbers
// compared as written.
func sameJSON(tb testing.TB, a, b []byte) bool {
	tb.Helper()
	decode := func(s []byte) any {
		d := json.NewDecoder(bytes.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			tb.Fatalf("%v: %.300s", err, s)
		}
		return v
	}
	return reflect.DeepEqual(decode(a), decode(b))
}

// checkResult compares appendResult with protojson on m.
func checkResult(tb testing.TB, m proto.Message) {
	tb.Helper()
	want, werr := resultJSON.Marshal(m)
	got, ok := appendResult(nil, m.ProtoReflect())
	switch {
	case !ok:
		return // protojson renders it
	case werr != nil:
		tb.Fatalf("appendResult rendered what protojson refuses (%v): %s", werr, got)
	case !sameJSON(tb, got, want):
		tb.Fatalf("appendResult differs from protojson:\n got %s\nwant %s", got, want)
	}
}

// fill sets every field of m, recursively to depth, with values derived
// from seed: lists and maps of two entries, every oneof member in turn.
func fill(m protoreflect.Message, depth, seed int) {
	fds := m.Descriptor().Fields()
	for i := range fds.Len() {
		fd := fds.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && od.Fields().Get(seed%od.Fields().Len()) != fd {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := range 2 {
				if v, ok := value(l.NewElement(), fd, depth, seed+j); ok {
					l.Append(v)
				}
			}
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for j := range 2 {
				k, _ := value(protoreflect.Value{}, fd.MapKey(), depth, seed+j*7+1)
				if v, ok := value(mp.NewValue(), fd.MapValue(), depth, seed+j); ok {
					mp.Set(k.MapKey(), v)
				}
			}
		default:
			var zero protoreflect.Value
			if fd.Message() != nil {
				zero = m.NewField(fd)
			}
			if v, ok := value(zero, fd, depth, seed+i); ok {
				m.Set(fd, v)
			}
		}
	}
}

// floats are the numbers whose formatting differs most.
var floats = []float64{0, 1, -2.5, 2.666666666666667, 1e-7, 1e21, 123456789.125, math.SmallestNonzeroFloat64, math.MaxFloat64, 1e20}

func value(v protoreflect.Value, fd protoreflect.FieldDescriptor, depth, seed int) (protoreflect.Value, bool) {
	strs := []string{"", "plain", "quote \" backslash \\ newline \n tab \t ctl \x01 \x1f", "ünïcödé ✓ 😀", "</script>&"}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(seed%2 == 1), true
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(strs[seed%len(strs)] + fmt.Sprint(seed)), true
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(strs[seed%len(strs)])), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(seed*7919 - 50000)), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(seed)*1e15 - 3), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(seed * 104729)), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(seed) * 1e17), true
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(floats[seed%len(floats)] / 3)), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(floats[seed%len(floats)]), true
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(seed % vals.Len()).Number()), true
	case protoreflect.MessageKind:
		if depth == 0 {
			return v, false
		}
		m := v.Message()
		switch m.Interface().(type) {
		case *timestamppb.Timestamp:
			m.Set(m.Descriptor().Fields().ByNumber(1), protoreflect.ValueOfInt64(int64(seed)*86400*97))
			m.Set(m.Descriptor().Fields().ByNumber(2), protoreflect.ValueOfInt32([]int32{0, 5e8, 1000, 638107759}[seed%4]))
		case *durationpb.Duration:
			m.Set(m.Descriptor().Fields().ByNumber(1), protoreflect.ValueOfInt64(int64(seed%5-2)*90))
			if seed%5 != 2 {
				m.Set(m.Descriptor().Fields().ByNumber(2), protoreflect.ValueOfInt32(int32(seed%5-2)*1500))
			}
		case *structpb.Value:
			sv, _ := structpb.NewValue(map[string]any{"n": floats[seed%len(floats)], "s": strs[seed%len(strs)], "l": []any{true, nil, "x", 2.0}, "o": map[string]any{"z": 1.0, "a": "b"}})
			proto.Merge(m.Interface(), sv)
		default:
			fill(m, depth-1, seed+1)
		}
		return v, true
	}
	return v, false
}

// TestAppendResultMatchesProtojson renders every result type the bridge
// may return, filled in many ways, and the real get-sync-status result,
// with appendResult and protojson.
func TestAppendResultMatchesProtojson(t *testing.T) {
	t.Parallel()
	b := benchBridge(t)
	msgs := []proto.Message{&toolsvcv1.ToolError{}, &toolsvcv1.CallToolResponse{}, &structpb.Struct{}}
	for _, tool := range b.catalog.Load().tools.latest {
		msgs = append(msgs, tool.Output.New().Interface())
	}
	for _, m := range msgs {
		t.Run(string(m.ProtoReflect().Descriptor().FullName()), func(t *testing.T) {
			t.Parallel()
			checkResult(t, m) // empty
			for seed := range 12 {
				f := m.ProtoReflect().New()
				fill(f, 4, seed)
				checkResult(t, f.Interface())
			}
		})
	}
	real := &syncv1.GetSyncStatusResponse{}
	if err := protojson.Unmarshal([]byte(syncStatusJSON), real); err != nil {
		t.Fatal(err)
	}
	checkResult(t, real)
	if _, ok := appendResult(nil, real.ProtoReflect()); !ok {
		t.Fatal("the get-sync-status result went to protojson")
	}
}

// TestAppendResultFallback: what protojson refuses or appendResult does
// not render goes to protojson.
func TestAppendResultFallback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		m    proto.Message
	}{
		{name: "invalid UTF-8", m: &toolsvcv1.ToolError{Message: "\xff"}},
		{name: "empty Value", m: &structpb.ListValue{Values: []*structpb.Value{{}}}},
		{name: "NaN Value", m: structpb.NewListValue(&structpb.ListValue{Values: []*structpb.Value{structpb.NewNumberValue(math.NaN())}}).GetListValue()},
		{name: "timestamp out of range", m: &timestamppb.Timestamp{Seconds: math.MaxInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, ok := appendResult(nil, tt.m.ProtoReflect()); ok {
				t.Fatalf("appendResult = %s, want a fallback", got)
			}
		})
	}
}

// FuzzAppendResult decodes arbitrary bytes into the get-sync-status result
// and compares appendResult with protojson.
func FuzzAppendResult(f *testing.F) {
	real := &syncv1.GetSyncStatusResponse{}
	if err := protojson.Unmarshal([]byte(syncStatusJSON), real); err != nil {
		f.Fatal(err)
	}
	seed, _ := proto.Marshal(real)
	f.Add(seed)
	filled := real.ProtoReflect().New()
	fill(filled, 4, 3)
	seed, _ = proto.Marshal(filled.Interface())
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &syncv1.GetSyncStatusResponse{}
		if proto.Unmarshal(data, m) != nil {
			return
		}
		checkResult(t, m)
	})
}

// BenchmarkResultJSON renders the get-sync-status result with protojson
// and with appendResult into a reused buffer, as marshalResult does.
func BenchmarkResultJSON(b *testing.B) {
	real := &syncv1.GetSyncStatusResponse{}
	if err := protojson.Unmarshal([]byte(syncStatusJSON), real); err != nil {
		b.Fatal(err)
	}
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := resultJSON.Marshal(real); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("appendResult", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = appendResult(buf[:0], real.ProtoReflect()); !ok {
				b.Fatal("fallback")
			}
		}
	})
}
