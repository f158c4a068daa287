package schema

import "google.golang.org/protobuf/reflect/protoreflect"

// anyValue is the description of the one schema without a type: a
// google.protobuf.Value can be any JSON value, and a type union would break
// the no-type-arrays/no-anyOf rule. CheckProviders reports it where a
// provider requires a type.
const anyValue = "Any JSON value."

// wellKnown returns the protojson mapping of a google.protobuf well-known
// type, or false if md is an ordinary message. Each call returns fresh maps,
// so rules may edit them.
func wellKnown(md protoreflect.MessageDescriptor) (Schema, bool) {
	switch md.FullName() {
	case "google.protobuf.Timestamp":
		return Schema{"type": "string", "format": "date-time"}, true
	case "google.protobuf.Duration":
		return Schema{"type": "string", "pattern": durationPattern}, true
	case "google.protobuf.Struct":
		// The only open object: a Struct is free-form by definition.
		return Schema{"type": "object", "additionalProperties": true}, true
	case "google.protobuf.Value":
		return Schema{"description": anyValue}, true
	case "google.protobuf.ListValue":
		return Schema{"type": "array", "items": Schema{"description": anyValue}}, true
	case "google.protobuf.FieldMask":
		return Schema{"type": "string", "description": "Comma-separated field paths in lowerCamelCase."}, true
	case "google.protobuf.Any":
		return Schema{
			"type":                 "object",
			"properties":           map[string]any{"@type": Schema{"type": "string"}},
			"required":             []string{"@type"},
			"additionalProperties": true,
		}, true
	case "google.protobuf.Empty":
		return Schema{"type": "object", "properties": map[string]any{}, "additionalProperties": false}, true
	case "google.protobuf.DoubleValue":
		return scalar(protoreflect.DoubleKind), true
	case "google.protobuf.FloatValue":
		return scalar(protoreflect.FloatKind), true
	case "google.protobuf.Int64Value":
		return scalar(protoreflect.Int64Kind), true
	case "google.protobuf.UInt64Value":
		return scalar(protoreflect.Uint64Kind), true
	case "google.protobuf.Int32Value":
		return scalar(protoreflect.Int32Kind), true
	case "google.protobuf.UInt32Value":
		return scalar(protoreflect.Uint32Kind), true
	case "google.protobuf.BoolValue":
		return scalar(protoreflect.BoolKind), true
	case "google.protobuf.StringValue":
		return scalar(protoreflect.StringKind), true
	case "google.protobuf.BytesValue":
		return scalar(protoreflect.BytesKind), true
	}
	return nil, false
}

// wrapperKind returns the scalar kind a wrapper message stands for, so that
// scalar rules on a wrapper field (for example string.max_len on a
// google.protobuf.StringValue) are accepted like protovalidate accepts them.
func wrapperKind(md protoreflect.MessageDescriptor) (protoreflect.Kind, bool) {
	switch md.FullName() {
	case "google.protobuf.DoubleValue":
		return protoreflect.DoubleKind, true
	case "google.protobuf.FloatValue":
		return protoreflect.FloatKind, true
	case "google.protobuf.Int64Value":
		return protoreflect.Int64Kind, true
	case "google.protobuf.UInt64Value":
		return protoreflect.Uint64Kind, true
	case "google.protobuf.Int32Value":
		return protoreflect.Int32Kind, true
	case "google.protobuf.UInt32Value":
		return protoreflect.Uint32Kind, true
	case "google.protobuf.BoolValue":
		return protoreflect.BoolKind, true
	case "google.protobuf.StringValue":
		return protoreflect.StringKind, true
	case "google.protobuf.BytesValue":
		return protoreflect.BytesKind, true
	}
	return 0, false
}
