package schema_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/durationpb"
)

var (
	validatorOnce sync.Once
	validator     protovalidate.Validator
	validatorErr  error
)

// testValidator returns the protovalidate validator the server would use.
func testValidator(tb testing.TB) protovalidate.Validator {
	tb.Helper()
	validatorOnce.Do(func() { validator, validatorErr = protovalidate.New() })
	if validatorErr != nil {
		tb.Fatalf("protovalidate.New: %v", validatorErr)
	}
	return validator
}

// serverAccepts decodes and validates a payload like the server does.
func serverAccepts(tb testing.TB, md protoreflect.MessageDescriptor, payload []byte) (*dynamicpb.Message, error) {
	tb.Helper()
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal(payload, m); err != nil {
		return nil, err
	}
	if err := testValidator(tb).Validate(m); err != nil {
		return nil, err
	}
	return m, nil
}

// TestConformanceRandomMessages checks that protojson.Marshal of many random
// valid messages validates against the derived schema.
func TestConformanceRandomMessages(t *testing.T) {
	t.Parallel()
	const perMessage = 300
	for _, name := range []string{"Scalars", "Collections", "WellKnown", "Tree", "Everything"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			md := message(t, name)
			sch := compileSchema(t, derive(t, name))
			g := generator{r: rand.New(rand.NewPCG(1, uint64(len(name))))}
			for i := range perMessage {
				m := g.message(md)
				// Random strings cannot satisfy Validated's rules; its
				// conformance is covered by the explicit tables below.
				if f := md.Fields().ByName("validated"); f != nil {
					m.Clear(f)
				}
				if err := testValidator(t).Validate(m); err != nil {
					t.Fatalf("message %d: protovalidate rejects a rule-free message: %v", i, err)
				}
				out, err := protojson.Marshal(m)
				if err != nil {
					t.Fatalf("message %d: protojson.Marshal: %v", i, err)
				}
				if err := validateJSON(t, sch, out); err != nil {
					t.Fatalf("message %d: protojson output does not validate:\n%s\n%v", i, out, err)
				}
			}
		})
	}
}

// validValidated is a Validated payload that satisfies every rule.
const validValidated = `{"id":"8c0a3a54-5b1f-4f6e-9d8e-3c2b1a0f9e7d","name":"abc","region":"eu","pageSize":10,` +
	`"tags":["a"],"color":"COLOR_RED","inner":{},"user":"u1"}`

// withField returns validValidated with one field replaced (or removed when
// value is empty).
func withField(tb testing.TB, base, field, value string) string {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		tb.Fatal(err)
	}
	if value == "" {
		delete(m, field)
	} else {
		m[field] = json.RawMessage(value)
	}
	out, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return string(out)
}

// TestConformanceAcceptedPayloads: payloads the server accepts validate
// against the schema, both as sent and as protojson re-emits them.
func TestConformanceAcceptedPayloads(t *testing.T) {
	t.Parallel()
	full := `{"id":"8C0A3A54-5B1F-4F6E-9D8E-3C2B1A0F9E7D","email":"a@example.com","name":"abcdef","code":"ABC",` +
		`"region":"us","pageSize":100,"offset":"5","ratio":0.5,"retries":2,"tags":["a","b","c","d","e"],` +
		`"color":"COLOR_BLUE","quotas":{"k":3,"l":0},"payload":"aGVsbG8=","note":"hi","website":"https://example.com/x",` +
		`"legacy":"x","slug":"abc-x","inner":{"label":"l","weight":1.5},"score":0.5,"group":"g","outside":11,` +
		`"prefixed":"tool-x","nickname":"nick","deadline":"2999-01-01T00:00:00Z",` +
		`"extra":{"@type":"type.googleapis.com/google.protobuf.Duration","value":"1s"},"budget":"200"}`
	tests := []struct {
		name    string
		message string
		payload string
	}{
		{name: "minimal validated", message: "Validated", payload: validValidated},
		{name: "full validated", message: "Validated", payload: full},
		{name: "zero optional note", message: "Validated", payload: withField(t, validValidated, "note", `""`)},
		{name: "outside below", message: "Validated", payload: withField(t, validValidated, "outside", `4`)},
		{name: "empty", message: "Scalars", payload: `{}`},
		{name: "scalars", message: "Scalars", payload: `{"fInt32":-2147483648,"fInt64":"-9223372036854775808",` +
			`"fUint64":"18446744073709551615","fFloat":3.4028235e+38,"fBytes":"","color":"COLOR_RED","maybe":"",` +
			`"bigNumbers":["1","-2"],"inners":[{"label":"x"}],"byInner":{}}`},
		{name: "maps", message: "Collections", payload: `{"labels":{"a":"b"},"byId":{"-5":{"weight":2}},` +
			`"flags":{"9223372036854775807":true},"byBool":{"true":"COLOR_RED","false":"COLOR_BLUE"},"counters":{"0":"1"}}`},
		{name: "well known", message: "WellKnown", payload: `{"createdAt":"1970-01-01T00:00:00.5Z","timeout":"-1.000000001s",` +
			`"attributes":{"a":[1,{"b":null}]},"anything":"x","list":[1,"a",null],"wUint64":"7","wBytes":"AA==",` +
			`"mask":"a.b,cD","detail":{"@type":"type.googleapis.com/google.protobuf.Empty","value":{}},"nothing":{},` +
			`"nullValue":null,"history":["2024-02-29T23:59:59Z"]}`},
		{name: "deep tree", message: "Tree", payload: `{"parent":{"parent":{"parent":{"parent":{"parent":{"name":"x"}}}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			md := message(t, tt.message)
			m, err := serverAccepts(t, md, []byte(tt.payload))
			if err != nil {
				t.Fatalf("server rejects a payload meant to be valid: %v", err)
			}
			sch := compileSchema(t, derive(t, tt.message))
			if err := validateJSON(t, sch, []byte(tt.payload)); err != nil {
				t.Errorf("schema rejects a payload the server accepts:\n%s\n%v", tt.payload, err)
			}
			out, err := protojson.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := validateJSON(t, sch, out); err != nil {
				t.Errorf("schema rejects protojson output:\n%s\n%v", out, err)
			}
		})
	}
}

// TestConformanceRejectedPayloads: payloads the server rejects (unknown
// fields, wrong types, broken rules) are rejected by the schema too.
func TestConformanceRejectedPayloads(t *testing.T) {
	t.Parallel()
	v := func(field, value string) string { return withField(t, validValidated, field, value) }
	tests := []struct {
		name    string
		message string
		payload string
	}{
		{name: "unknown field", message: "Validated", payload: v("bogus", `1`)},
		{name: "unknown nested field", message: "Validated", payload: v("inner", `{"nope":1}`)},
		{name: "wrong type", message: "Validated", payload: v("pageSize", `"ten"`)},
		{name: "gt", message: "Validated", payload: v("pageSize", `0`)},
		{name: "lte", message: "Validated", payload: v("pageSize", `101`)},
		{name: "min_len", message: "Validated", payload: v("name", `"ab"`)},
		{name: "in", message: "Validated", payload: v("region", `"asia"`)},
		{name: "pattern", message: "Validated", payload: v("code", `"abc"`)},
		{name: "min_items", message: "Validated", payload: v("tags", `[]`)},
		{name: "max_items", message: "Validated", payload: v("tags", `["a","b","c","d","e","f"]`)},
		{name: "unique", message: "Validated", payload: v("tags", `["a","a"]`)},
		{name: "items rule", message: "Validated", payload: v("tags", `[""]`)},
		{name: "enum not_in", message: "Validated", payload: v("color", `"COLOR_UNSPECIFIED"`)},
		{name: "enum unknown name", message: "Validated", payload: v("color", `"COLOR_PURPLE"`)},
		{name: "required missing", message: "Validated", payload: v("id", ``)},
		{name: "required message missing", message: "Validated", payload: v("inner", ``)},
		{name: "required empty", message: "Validated", payload: v("id", `""`)},
		{name: "uuid", message: "Validated", payload: v("id", `"not-a-uuid"`)},
		{name: "email", message: "Validated", payload: v("email", `"not-an-email"`)},
		{name: "map value rule", message: "Validated", payload: v("quotas", `{"k":-1}`)},
		{name: "map key rule", message: "Validated", payload: v("quotas", `{"":1}`)},
		{name: "lt double", message: "Validated", payload: v("ratio", `1`)},
		{name: "float gt", message: "Validated", payload: v("score", `0.05`)},
		{name: "max_len optional", message: "Validated", payload: v("note", `"`+strings.Repeat("x", 141)+`"`)},
		{name: "wrapper rule", message: "Validated", payload: v("nickname", `"abcdefghijk"`)},
		{name: "int64 in", message: "Validated", payload: v("budget", `"150"`)},
		{name: "int64 gte 0", message: "Validated", payload: v("offset", `"-1"`)},
		{name: "any in", message: "Validated", payload: v("extra", `{"@type":"type.googleapis.com/google.protobuf.Empty","value":{}}`)},
		{name: "prefix", message: "Validated", payload: v("prefixed", `"x-tool"`)},
		{name: "bad base64", message: "Validated", payload: v("payload", `"!!!"`)},
		{name: "bad timestamp", message: "Validated", payload: v("deadline", `"tomorrow"`)},
		{name: "int32 overflow", message: "Scalars", payload: `{"fInt32":2147483648}`},
		{name: "int32 fraction", message: "Scalars", payload: `{"fInt32":1.5}`},
		{name: "uint32 negative", message: "Scalars", payload: `{"fUint32":-1}`},
		{name: "uint64 negative", message: "Scalars", payload: `{"fUint64":"-1"}`},
		{name: "float out of range", message: "Scalars", payload: `{"fFloat":1e39}`},
		{name: "bytes as number", message: "Scalars", payload: `{"fBytes":5}`},
		{name: "bool as string", message: "Scalars", payload: `{"fBool":"yes"}`},
		{name: "list as object", message: "Scalars", payload: `{"tags":{"a":"b"}}`},
		{name: "int map key", message: "Collections", payload: `{"byId":{"x":{}}}`},
		{name: "bool map key", message: "Collections", payload: `{"byBool":{"yes":"COLOR_RED"}}`},
		{name: "duration without unit", message: "WellKnown", payload: `{"timeout":"5"}`},
		{name: "duration too precise", message: "WellKnown", payload: `{"timeout":"1.0000000001s"}`},
		{name: "timestamp month", message: "WellKnown", payload: `{"createdAt":"2020-13-01T00:00:00Z"}`},
		{name: "any without type", message: "WellKnown", payload: `{"detail":{"value":"1s"}}`},
		{name: "empty with field", message: "WellKnown", payload: `{"nothing":{"a":1}}`},
		{name: "recursive unknown field", message: "Tree", payload: `{"parent":{"parent":{"bogus":1}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			md := message(t, tt.message)
			if _, err := serverAccepts(t, md, []byte(tt.payload)); err == nil {
				t.Fatalf("server accepts a payload meant to be invalid: %s", tt.payload)
			}
			if err := validateJSON(t, compileSchema(t, derive(t, tt.message)), []byte(tt.payload)); err == nil {
				t.Errorf("schema accepts a payload the server rejects: %s", tt.payload)
			}
		})
	}
}

// generator builds random messages that protojson can represent: finite
// floats and defined enum values only (see Derive's known gaps).
type generator struct {
	r *rand.Rand
}

// maxGenDepth bounds nesting in generated messages; deep enough to pass the
// schema's recursion bound.
const maxGenDepth = 5

func (g *generator) message(md protoreflect.MessageDescriptor) *dynamicpb.Message {
	m := dynamicpb.NewMessage(md)
	g.fill(m, 0)
	return m
}

func (g *generator) fill(m protoreflect.Message, depth int) {
	if g.wellKnown(m, depth) {
		return
	}
	fields := m.Descriptor().Fields()
	oneofSet := map[protoreflect.FullName]bool{}
	for i := range fields.Len() {
		fd := fields.Get(i)
		if g.r.IntN(3) == 0 {
			continue
		}
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
			if oneofSet[od.FullName()] {
				continue
			}
			oneofSet[od.FullName()] = true
		}
		g.setField(m, fd, depth)
	}
}

func (g *generator) setField(m protoreflect.Message, fd protoreflect.FieldDescriptor, depth int) {
	isMsg := func(fd protoreflect.FieldDescriptor) bool { return fd.Message() != nil }
	switch {
	case fd.IsList():
		if isMsg(fd) && depth >= maxGenDepth {
			return
		}
		l := m.Mutable(fd).List()
		for range g.r.IntN(4) {
			if isMsg(fd) {
				e := l.NewElement()
				g.fill(e.Message(), depth+1)
				l.Append(e)
			} else {
				l.Append(g.scalar(fd))
			}
		}
	case fd.IsMap():
		if isMsg(fd.MapValue()) && depth >= maxGenDepth {
			return
		}
		mp := m.Mutable(fd).Map()
		for range g.r.IntN(4) {
			key := g.scalar(fd.MapKey()).MapKey()
			if isMsg(fd.MapValue()) {
				v := mp.NewValue()
				g.fill(v.Message(), depth+1)
				mp.Set(key, v)
			} else {
				mp.Set(key, g.scalar(fd.MapValue()))
			}
		}
	case isMsg(fd):
		if depth >= maxGenDepth {
			return
		}
		v := m.NewField(fd)
		g.fill(v.Message(), depth+1)
		m.Set(fd, v)
	default:
		m.Set(fd, g.scalar(fd))
	}
}

// wellKnown fills well-known types with values inside their JSON mapping's
// domain, reporting whether m was one.
func (g *generator) wellKnown(m protoreflect.Message, depth int) bool {
	fields := m.Descriptor().Fields()
	set := func(name string, v protoreflect.Value) { m.Set(fields.ByName(protoreflect.Name(name)), v) }
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp":
		set("seconds", protoreflect.ValueOfInt64(-62135596800+g.r.Int64N(253402300799+62135596800+1)))
		set("nanos", protoreflect.ValueOfInt32(g.r.Int32N(1_000_000_000)))
	case "google.protobuf.Duration":
		seconds := g.r.Int64N(315576000000 + 1)
		nanos := g.r.Int32N(1_000_000_000)
		if g.r.IntN(2) == 0 {
			seconds, nanos = -seconds, -nanos
		}
		set("seconds", protoreflect.ValueOfInt64(seconds))
		set("nanos", protoreflect.ValueOfInt32(nanos))
	case "google.protobuf.Struct":
		fields := m.Mutable(fields.ByName("fields")).Map()
		for range g.r.IntN(3) {
			v := fields.NewValue()
			g.jsonValue(v.Message(), depth+1)
			fields.Set(protoreflect.ValueOfString(g.text()).MapKey(), v)
		}
	case "google.protobuf.Value":
		g.jsonValue(m, depth)
	case "google.protobuf.ListValue":
		values := m.Mutable(fields.ByName("values")).List()
		for range g.r.IntN(3) {
			v := values.NewElement()
			g.jsonValue(v.Message(), depth+1)
			values.Append(v)
		}
	case "google.protobuf.FieldMask":
		paths := m.Mutable(fields.ByName("paths")).List()
		for range g.r.IntN(3) {
			paths.Append(protoreflect.ValueOfString(g.fieldPath()))
		}
	case "google.protobuf.Any":
		inner := durationpb.New(0)
		inner.Seconds = g.r.Int64N(1000)
		b, err := proto.Marshal(inner)
		if err != nil {
			panic(err)
		}
		set("type_url", protoreflect.ValueOfString("type.googleapis.com/google.protobuf.Duration"))
		set("value", protoreflect.ValueOfBytes(b))
	case "google.protobuf.Empty":
	default:
		if !strings.HasPrefix(string(m.Descriptor().FullName()), "google.protobuf.") || fields.Len() != 1 {
			return false
		}
		// A wrapper: its single "value" field.
		set("value", g.scalar(fields.ByName("value")))
	}
	return true
}

// jsonValue fills a google.protobuf.Value with a random JSON value.
func (g *generator) jsonValue(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	kind := g.r.IntN(6)
	if depth >= maxGenDepth {
		kind %= 4
	}
	switch kind {
	case 0:
		m.Set(fields.ByName("null_value"), protoreflect.ValueOfEnum(0))
	case 1:
		m.Set(fields.ByName("number_value"), protoreflect.ValueOfFloat64(g.float64()))
	case 2:
		m.Set(fields.ByName("string_value"), protoreflect.ValueOfString(g.text()))
	case 3:
		m.Set(fields.ByName("bool_value"), protoreflect.ValueOfBool(g.r.IntN(2) == 0))
	default:
		name := protoreflect.Name("struct_value")
		if kind == 5 {
			name = "list_value"
		}
		v := m.NewField(fields.ByName(name))
		g.wellKnown(v.Message(), depth+1)
		m.Set(fields.ByName(name), v)
	}
}

// scalar returns a random value of a scalar or enum field, favoring edges.
func (g *generator) scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	edge := g.r.IntN(4) == 0
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(g.r.IntN(2) == 0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		if edge {
			return protoreflect.ValueOfInt32([]int32{math.MinInt32, math.MaxInt32, 0, -1}[g.r.IntN(4)])
		}
		return protoreflect.ValueOfInt32(int32(g.r.Uint32()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		if edge {
			return protoreflect.ValueOfInt64([]int64{math.MinInt64, math.MaxInt64, 0, -1}[g.r.IntN(4)])
		}
		return protoreflect.ValueOfInt64(int64(g.r.Uint64()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if edge {
			return protoreflect.ValueOfUint32(math.MaxUint32)
		}
		return protoreflect.ValueOfUint32(g.r.Uint32())
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if edge {
			return protoreflect.ValueOfUint64(math.MaxUint64)
		}
		return protoreflect.ValueOfUint64(g.r.Uint64())
	case protoreflect.FloatKind:
		if edge {
			return protoreflect.ValueOfFloat32([]float32{math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 0}[g.r.IntN(4)])
		}
		return protoreflect.ValueOfFloat32(float32(g.float64()))
	case protoreflect.DoubleKind:
		if edge {
			return protoreflect.ValueOfFloat64([]float64{math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, 0}[g.r.IntN(4)])
		}
		return protoreflect.ValueOfFloat64(g.float64())
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(g.text())
	case protoreflect.BytesKind:
		b := make([]byte, g.r.IntN(8))
		for i := range b {
			b[i] = byte(g.r.Uint32())
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		return protoreflect.ValueOfEnum(values.Get(g.r.IntN(values.Len())).Number())
	}
	panic("unexpected kind " + fd.Kind().String())
}

// float64 returns a finite float in float32 range.
func (g *generator) float64() float64 {
	return (g.r.Float64() - 0.5) * math.Pow(10, float64(g.r.IntN(20)))
}

// text returns a random valid UTF-8 string with JSON-significant runes.
func (g *generator) text() string {
	alphabet := []rune("aZ09 _-./\\\"\n\té€😀<>&")
	runes := make([]rune, g.r.IntN(6))
	for i := range runes {
		runes[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(runes)
}

// fieldPath returns a snake_case field path that protojson can camel-case.
func (g *generator) fieldPath() string {
	parts := make([]string, 1+g.r.IntN(2))
	for i := range parts {
		parts[i] = []string{"a", "b_c", "display_name", "x"}[g.r.IntN(4)]
	}
	return strings.Join(parts, ".")
}
