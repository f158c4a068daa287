package schema_test

import (
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// FuzzSchemaAgreesWithProtojson: any payload of Everything that the server
// accepts (protojson.Unmarshal, then protovalidate) is re-emitted by
// protojson.Marshal in a form that validates against the derived schema.
// The canonical form is checked, not the raw payload: protojson also accepts
// proto field names, numbers as strings, null for defaults and so on, which
// the schema deliberately does not advertise. Values protojson can emit but
// the schema cannot describe without type unions (non-finite floats, unknown
// enum numbers; see Derive) are skipped.
//
// Run: go test ./internal/contract/schema -run '^$' -fuzz FuzzSchemaAgreesWithProtojson -fuzztime 20s
func FuzzSchemaAgreesWithProtojson(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"validated":` + validValidated + `}`,
		`{"scalars":{"fFloat":1.5,"fInt64":"-3","color":"COLOR_RED","byIndex":3},"tree":{"children":[{"name":"a"}]}}`,
		`{"collections":{"byId":{"7":{"label":"x"}},"byBool":{"true":1}},"wellKnown":{"timeout":"1.5s","list":[1,"x"]}}`,
	} {
		f.Add([]byte(seed))
	}
	md := message(f, "Everything")
	sch := compileSchema(f, derive(f, "Everything"))
	v := testValidator(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := dynamicpb.NewMessage(md)
		if err := protojson.Unmarshal(data, m); err != nil {
			return
		}
		if unrepresentable(m) || v.Validate(m) != nil || untypedAny(m) {
			return
		}
		out, err := protojson.Marshal(m)
		if err != nil {
			t.Fatalf("protojson.Marshal of an accepted message: %v", err)
		}
		if err := validateJSON(t, sch, out); err != nil {
			t.Fatalf("accepted payload %s\nre-emitted as %s\ndoes not validate: %v", data, out, err)
		}
	})
}

// untypedAny reports an Any without "@type" ({} reads as one), which the
// server refuses before validation (interceptors' limits, rule
// any.type_url) as the schema does.
func untypedAny(m protoreflect.Message) bool {
	if md := m.Descriptor(); md.FullName() == "google.protobuf.Any" {
		return m.Get(md.Fields().ByName("type_url")).String() == ""
	}
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		switch {
		case fd.IsList():
			for i := range v.List().Len() {
				found = found || untypedAny(v.List().Get(i).Message())
			}
		case fd.IsMap():
			if fd.MapValue().Kind() == protoreflect.MessageKind {
				v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					found = found || untypedAny(mv.Message())
					return !found
				})
			}
		default:
			found = untypedAny(v.Message())
		}
		return !found
	})
	return found
}

// unrepresentable reports values protojson emits in a form the schema does
// not describe: non-finite floats ("NaN", "Infinity") and enum numbers
// without a name.
func unrepresentable(m protoreflect.Message) bool {
	found := false
	var value func(fd protoreflect.FieldDescriptor, v protoreflect.Value) //nolint:staticcheck // declared first so the closure can recurse
	value = func(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
		switch fd.Kind() {
		case protoreflect.FloatKind, protoreflect.DoubleKind:
			f := v.Float()
			found = found || math.IsNaN(f) || math.IsInf(f, 0)
		case protoreflect.EnumKind:
			found = found || fd.Enum().Values().ByNumber(v.Enum()) == nil
		case protoreflect.MessageKind, protoreflect.GroupKind:
			found = found || unrepresentable(v.Message())
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			for i := range v.List().Len() {
				value(fd, v.List().Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				value(fd.MapValue(), mv)
				return !found
			})
		default:
			value(fd, v)
		}
		return !found
	})
	return found
}
