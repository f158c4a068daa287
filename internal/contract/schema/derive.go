package schema

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Draft202012 is the $schema URI of every document Derive returns.
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// DefaultMaxDepth is the recursion bound used when Options.MaxDepth <= 0.
const DefaultMaxDepth = 3

// Patterns of the string forms protojson uses for values JSON numbers cannot
// carry exactly.
const (
	signedIntPattern   = `^-?[0-9]+$`
	unsignedIntPattern = `^[0-9]+$`
	boolKeyPattern     = `^(true|false)$`
	// durationPattern allows at most nine fractional digits, like
	// protojson.Unmarshal; Marshal emits 0, 3, 6 or 9 of them.
	durationPattern = `^-?[0-9]+(\.[0-9]{1,9})?s$`
)

// maxFloat32Text is math.MaxFloat32 as protojson prints it (3.4028235e+38).
const maxFloat32Text = 3.4028235e38

// Schema is a JSON Schema (draft 2020-12) document or subschema. Nested
// schemas are Schema values too, so a document can be walked with type
// assertions on map[string]any. encoding/json sorts map keys, so marshaling a
// Schema is deterministic.
type Schema = map[string]any

// Options tunes Derive. The zero value is ready to use.
type Options struct {
	// FieldDefault returns the JSON default of a field, if the contract
	// declares one (docs/CONTRACTS.md: "defaults must be declared in schema"). The value
	// is emitted verbatim as the field's "default" keyword, so it must already
	// be in protojson form (for example a string for an int64 field). A nil
	// function declares no defaults.
	FieldDefault func(protoreflect.FieldDescriptor) (any, bool)

	// MaxDepth bounds recursion: a message type is expanded at most MaxDepth
	// times along one path of the schema tree. Values <= 0 mean
	// DefaultMaxDepth. Past the bound the field becomes
	// {"type":"object","additionalProperties":true} with a description saying
	// the recursive structure is not described further. That is the safest
	// choice: real payloads nested deeper still validate (the server's
	// protojson and protovalidate checks still apply to them), whereas a
	// closed empty object or a dropped property would reject valid requests.
	// CheckProviders reports the open object for OpenAI strict mode.
	MaxDepth int
}

// ErrNilDescriptor is returned by Derive when it is given no descriptor.
var ErrNilDescriptor = errors.New("schema: nil message descriptor")

// ErrNotObject is returned by Derive for a message whose protojson form is
// not a JSON object (for example google.protobuf.Timestamp): a tool's request
// and response must be objects.
var ErrNotObject = errors.New("schema: message is not a JSON object in protojson")

// ErrUnsatisfiable is returned (wrapped in a *DeriveError) when a field's
// rules admit no value, for example enum rules that exclude every value.
var ErrUnsatisfiable = errors.New("schema: rules admit no value")

// ErrRuleMismatch is returned (wrapped in a *DeriveError) when a field carries
// protovalidate rules of another type than the field, which protovalidate
// itself refuses to compile.
var ErrRuleMismatch = errors.New("schema: rule type does not match field type")

// DeriveError reports why Derive could not build a schema for a descriptor.
// Callers branch on the wrapped error with errors.Is (ErrNotObject,
// ErrUnsatisfiable, ErrRuleMismatch, or a regexp/protovalidate error).
type DeriveError struct {
	// Name is the full name of the message or field at fault.
	Name protoreflect.FullName
	// Err is the underlying cause.
	Err error
}

// Error implements error.
func (e *DeriveError) Error() string {
	return fmt.Sprintf("schema: derive %s: %v", e.Name, e.Err)
}

// Unwrap returns the underlying cause.
func (e *DeriveError) Unwrap() error { return e.Err }

// Derive returns the JSON Schema of the protojson form of md (with
// UseProtoNames false): a closed object whose properties are the fields'
// JSON names, whose "required" lists the fields that protovalidate requires
// (in declaration order) and whose keywords carry the protovalidate rules
// that JSON Schema can express. Rules it cannot express (CEL, byte lengths,
// "at most one of" for oneofs, bounds of 64-bit integers, ...) are appended
// to the description so agents and humans still see them.
//
// The schema describes the canonical form that protojson.Marshal emits, a
// subset of what protojson.Unmarshal accepts: input that conforms to it is
// accepted by the server's decoder. Known gaps, all in the direction of the
// schema being stricter than the server: non-finite floats ("NaN",
// "Infinity") and unknown enum numbers are not representable without type
// unions; extension fields are not described; 32-bit integers sent as strings
// and 64-bit integers sent as numbers are rejected.
//
// Derive caches nothing and is safe for concurrent use.
func Derive(md protoreflect.MessageDescriptor, opts Options) (Schema, error) {
	if md == nil {
		return nil, ErrNilDescriptor
	}
	d := deriver{opts: opts, expanded: map[protoreflect.FullName]int{}}
	if d.opts.MaxDepth <= 0 {
		d.opts.MaxDepth = DefaultMaxDepth
	}
	s, err := d.message(md)
	if err != nil {
		return nil, err
	}
	if s["type"] != "object" {
		return nil, &DeriveError{Name: md.FullName(), Err: ErrNotObject}
	}
	s["$schema"] = Draft202012
	return s, nil
}

// deriver holds the state of one Derive call.
type deriver struct {
	opts Options
	// expanded counts how often each message is expanded on the current path.
	expanded map[protoreflect.FullName]int
}

// message returns the schema of a message value: its well-known JSON mapping
// or a closed object.
func (d *deriver) message(md protoreflect.MessageDescriptor) (Schema, error) {
	if s, ok := wellKnown(md); ok {
		return s, nil
	}
	name := md.FullName()
	if d.expanded[name] >= d.opts.MaxDepth {
		return Schema{
			"type":                 "object",
			"additionalProperties": true,
			"description": joinText(comment(md), fmt.Sprintf(
				"Recursive message %s: nesting deeper than %d levels is not described here; the server still validates it.",
				name, d.opts.MaxDepth)),
		}, nil
	}
	d.expanded[name]++
	defer func() { d.expanded[name]-- }()

	fields := md.Fields()
	props := make(map[string]any, fields.Len())
	var required []string
	for i := range fields.Len() {
		fd := fields.Get(i)
		fs, req, err := d.field(fd)
		if err != nil {
			return nil, err
		}
		props[fd.JSONName()] = fs
		if req {
			required = append(required, fd.JSONName())
		}
	}
	s := Schema{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	notes, err := messageNotes(md)
	if err != nil {
		return nil, err
	}
	if text := joinText(comment(md), notes); text != "" {
		s["description"] = text
	}
	return s, nil
}

// field returns the schema of one field and whether it is required.
func (d *deriver) field(fd protoreflect.FieldDescriptor) (Schema, bool, error) {
	rules, err := protovalidate.ResolveFieldRules(fd)
	if err != nil {
		return nil, false, &DeriveError{Name: fd.FullName(), Err: err}
	}
	if rules.GetIgnore() == validate.Ignore_IGNORE_ALWAYS {
		rules = nil
	}

	var s Schema
	switch {
	case fd.IsMap():
		s, err = d.mapField(fd)
	case fd.IsList():
		var items Schema
		items, err = d.value(fd)
		s = Schema{"type": "array", "items": items}
	default:
		s, err = d.value(fd)
	}
	if err != nil {
		return nil, false, err
	}
	if err := applyFieldRules(s, fd, rules); err != nil {
		return nil, false, &DeriveError{Name: fd.FullName(), Err: err}
	}

	required := fd.Cardinality() == protoreflect.Required
	if rules.GetRequired() {
		required = true
		requireNonZero(s, fd)
	} else if rejectsZero(fd, rules) {
		// protovalidate applies these rules to the zero value of an
		// implicit-presence field, which protojson omits: the field must be sent.
		required = true
	}

	var notes []string
	if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() {
		notes = append(notes, oneofNote(od))
	}
	s["description"] = joinText(comment(fd), asString(s["description"]), notes)
	if s["description"] == "" {
		delete(s, "description")
	}
	if d.opts.FieldDefault != nil {
		if v, ok := d.opts.FieldDefault(fd); ok {
			s["default"] = v
		}
	}
	return s, required, nil
}

// mapField returns the schema of a map field: an object whose property names
// are the keys in protojson form and whose values follow the value schema.
func (d *deriver) mapField(fd protoreflect.FieldDescriptor) (Schema, error) {
	values, err := d.value(fd.MapValue())
	if err != nil {
		return nil, err
	}
	s := Schema{"type": "object", "additionalProperties": values}
	switch fd.MapKey().Kind() {
	case protoreflect.StringKind:
	case protoreflect.BoolKind:
		s["propertyNames"] = Schema{"type": "string", "pattern": boolKeyPattern}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		s["propertyNames"] = Schema{"type": "string", "pattern": unsignedIntPattern}
	default:
		s["propertyNames"] = Schema{"type": "string", "pattern": signedIntPattern}
	}
	return s, nil
}

// value returns the schema of a single (non-repeated) value of fd's type.
func (d *deriver) value(fd protoreflect.FieldDescriptor) (Schema, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return d.message(fd.Message())
	case protoreflect.EnumKind:
		return enumSchema(fd.Enum()), nil
	default:
		return scalar(fd.Kind()), nil
	}
}

// scalar returns the protojson schema of a scalar kind.
func scalar(k protoreflect.Kind) Schema {
	switch k {
	case protoreflect.BoolKind:
		return Schema{"type": "boolean"}
	case protoreflect.StringKind:
		return Schema{"type": "string"}
	case protoreflect.BytesKind:
		return Schema{"type": "string", "contentEncoding": "base64"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return Schema{"type": "integer", "minimum": int64(math.MinInt32), "maximum": int64(math.MaxInt32)}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return Schema{"type": "integer", "minimum": int64(0), "maximum": int64(math.MaxUint32)}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return Schema{"type": "string", "pattern": signedIntPattern}
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return Schema{"type": "string", "pattern": unsignedIntPattern}
	case protoreflect.FloatKind:
		// protojson.Unmarshal rejects values outside the float32 range;
		// Marshal prints math.MaxFloat32 as its shortest float32 form, which
		// is slightly above it as a float64.
		return Schema{"type": "number", "minimum": -maxFloat32Text, "maximum": maxFloat32Text}
	default: // DoubleKind
		return Schema{"type": "number"}
	}
}

// enumSchema returns the schema of an enum: its value names, in declaration
// order. google.protobuf.NullValue is JSON null in protojson.
func enumSchema(ed protoreflect.EnumDescriptor) Schema {
	if ed.FullName() == "google.protobuf.NullValue" {
		return Schema{"type": "null"}
	}
	values := ed.Values()
	names := make([]any, values.Len())
	for i := range values.Len() {
		names[i] = string(values.Get(i).Name())
	}
	return Schema{"type": "string", "enum": names}
}

// comment returns the trimmed leading comment of a descriptor, if its file
// carries source info.
func comment(desc protoreflect.Descriptor) string {
	file := desc.ParentFile()
	if file == nil {
		return ""
	}
	raw := file.SourceLocations().ByDescriptor(desc).LeadingComments
	if raw == "" {
		return ""
	}
	lines := strings.Split(raw, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimSpace(line)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// joinText joins the non-empty texts (strings or []string) with newlines.
func joinText(parts ...any) string {
	var b strings.Builder
	add := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			add(p)
		case []string:
			for _, s := range p {
				add(s)
			}
		}
	}
	return b.String()
}

// asString returns v if it is a string, else "".
func asString(v any) string {
	s, _ := v.(string)
	return s
}

// addNote appends a sentence to a schema's description.
func addNote(s Schema, note string) {
	s["description"] = joinText(asString(s["description"]), note)
}

// oneofNote documents a oneof on each of its members: JSON Schema could only
// express it with oneOf/not, which providers reject.
func oneofNote(od protoreflect.OneofDescriptor) string {
	names := jsonNames(od.Fields())
	rules, err := protovalidate.ResolveOneofRules(od)
	if err == nil && rules.GetRequired() {
		return fmt.Sprintf("Part of oneof %s: exactly one of %s must be set.", od.Name(), names)
	}
	return fmt.Sprintf("Part of oneof %s: at most one of %s may be set.", od.Name(), names)
}

// jsonNames lists the JSON names of fields.
func jsonNames(fields protoreflect.FieldDescriptors) string {
	names := make([]string, fields.Len())
	for i := range fields.Len() {
		names[i] = fields.Get(i).JSONName()
	}
	return strings.Join(names, ", ")
}
