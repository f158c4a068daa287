package registry

import (
	"slices"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/schema"
)

// typedIDs maps toolsvc's predefined id rules (ids.proto) to the JSON Schema
// pattern each enforces, so the derived schema says what the server checks.
var typedIDs = []struct {
	ext     protoreflect.ExtensionType
	pattern string
	what    string
}{
	{toolsvcv1.E_MemoryId, "^mem_[0-9a-f]{32}$", "a memory id"},
	{toolsvcv1.E_KnowledgeItemId, "^[a-z0-9][a-z0-9._-]{0,127}$", "a knowledge item id"},
	{toolsvcv1.E_ToolName, "^[a-z][a-z0-9]*(-[a-z0-9]+)+$", "a tool name"},
	{toolsvcv1.E_Semver, "^(0|[1-9][0-9]*)[.](0|[1-9][0-9]*)[.](0|[1-9][0-9]*)$", "a semantic version"},
}

// applyTypedIDs adds the pattern of typed-id rules to the schema of md,
// walking nested messages and repeated items.
func applyTypedIDs(s schema.Schema, md protoreflect.MessageDescriptor) {
	applyTypedIDsDepth(s, md, 0)
}

func applyTypedIDsDepth(s schema.Schema, md protoreflect.MessageDescriptor, depth int) {
	if depth > 8 {
		return
	}
	props, _ := s["properties"].(map[string]any)
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		prop, _ := props[fd.JSONName()].(map[string]any)
		if prop == nil {
			continue
		}
		rules, _ := extension(fd.Options(), validate.E_Field).(*validate.FieldRules)
		target := prop
		str := rules.GetString()
		if fd.IsList() {
			target, _ = prop["items"].(map[string]any)
			str = rules.GetRepeated().GetItems().GetString()
		}
		if target == nil {
			continue
		}
		if fd.Kind() == protoreflect.StringKind && str != nil {
			for _, id := range typedIDs {
				if on, _ := proto.GetExtension(str, id.ext).(bool); on {
					target["pattern"] = id.pattern
					// No typed id matches "", and protovalidate checks the
					// zero value of an implicit-presence field (protojson
					// omits it): such a field must be sent.
					if !fd.IsList() && !fd.HasPresence() && rules.GetIgnore() == validate.Ignore_IGNORE_UNSPECIFIED {
						require(s, md, fd)
					}
				}
			}
		}
		if fd.Kind() == protoreflect.MessageKind && !fd.IsMap() {
			applyTypedIDsDepth(target, fd.Message(), depth+1)
		}
	}
}

// require adds fd to the "required" list of s, the schema of md, keeping the
// list in declaration order as schema.Derive writes it.
func require(s schema.Schema, md protoreflect.MessageDescriptor, fd protoreflect.FieldDescriptor) {
	have, _ := s["required"].([]string)
	if slices.Contains(have, fd.JSONName()) {
		return
	}
	var out []string
	fields := md.Fields()
	for i := range fields.Len() {
		name := fields.Get(i).JSONName()
		if name == fd.JSONName() || slices.Contains(have, name) {
			out = append(out, name)
		}
	}
	s["required"] = out
}
