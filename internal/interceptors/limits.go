package interceptors

import (
	"fmt"
	"strings"
	"sync"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// DefaultMaxJSONDepth bounds how deeply free-form JSON arguments (Struct,
// Value, ListValue fields such as add-memory's metadata) may nest when
// Config.MaxJSONDepth is zero.
const DefaultMaxJSONDepth = 32

// limits checks, before protovalidate, what hostile input must never reach
// a handler and what protovalidate checks either not at all or too slowly:
//   - strings never contain NUL (PostgreSQL cannot store it, and it is
//     never meaningful in a tool argument), so every backend answers alike;
//   - free-form JSON nests at most maxDepth levels;
//   - an Any names its type ("@type");
//   - a repeated field longer than its max_items rule is refused at once,
//     before protovalidate evaluates every element (e.g. 100,000 tags).
func limits(m protoreflect.Message, maxDepth int) *toolerr.Error {
	var v *toolsvcv1.FieldViolation
	walkLimits(m, "", 0, maxDepth, &v)
	if v == nil {
		return nil
	}
	return &toolerr.Error{
		Code:       toolerr.InvalidInput,
		Message:    fmt.Sprintf("invalid input: %s: %s", v.GetField(), v.GetMessage()),
		Violations: []*toolsvcv1.FieldViolation{v},
	}
}

var maxItemsCache sync.Map // protoreflect.FieldDescriptor -> uint64 (0 = none)

func maxItems(fd protoreflect.FieldDescriptor) uint64 {
	if v, ok := maxItemsCache.Load(fd); ok {
		return v.(uint64)
	}
	var n uint64
	if rules, ok := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules); ok && rules != nil {
		n = rules.GetRepeated().GetMaxItems()
	}
	maxItemsCache.Store(fd, n)
	return n
}

func isJSONValue(md protoreflect.MessageDescriptor) bool {
	switch md.FullName() {
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return true
	}
	return false
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// walkLimits stops at the first violation (found is set).
func walkLimits(m protoreflect.Message, path string, jsonDepth, maxDepth int, found **toolsvcv1.FieldViolation) {
	if jsonDepth > maxDepth {
		*found = &toolsvcv1.FieldViolation{Field: path, Rule: "json.max_depth", Message: fmt.Sprintf("JSON nests deeper than %d levels", maxDepth)}
		return
	}
	// An Any names its type in "@type"; protojson reads {} as an Any with
	// none, which means nothing, and the derived schema requires it.
	if md := m.Descriptor(); md.FullName() == "google.protobuf.Any" && m.Get(md.Fields().ByName("type_url")).String() == "" {
		*found = &toolsvcv1.FieldViolation{Field: path, Rule: "any.type_url", Message: `an Any needs "@type"`}
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, val protoreflect.Value) bool {
		name := fd.JSONName()
		if m.Descriptor().FullName() == "google.protobuf.Struct" || m.Descriptor().FullName() == "google.protobuf.Value" || m.Descriptor().FullName() == "google.protobuf.ListValue" {
			name = "" // JSON containers are addressed by key/index, not by their proto fields
		}
		p := path
		if name != "" {
			p = join(path, name)
		}
		depth := jsonDepth
		if fd.Kind() == protoreflect.MessageKind && isJSONValue(fd.Message()) {
			depth++
		}
		switch {
		case fd.IsList():
			l := val.List()
			if n := maxItems(fd); n > 0 && uint64(l.Len()) > n {
				*found = &toolsvcv1.FieldViolation{Field: p, Rule: "repeated.max_items", Message: fmt.Sprintf("must contain no more than %d item(s), got %d", n, l.Len())}
				return false
			}
			for i := 0; i < l.Len() && *found == nil; i++ {
				ip := fmt.Sprintf("%s[%d]", p, i)
				if fd.Kind() == protoreflect.StringKind {
					checkString(l.Get(i).String(), ip, found)
				} else if fd.Kind() == protoreflect.MessageKind {
					walkLimits(l.Get(i).Message(), ip, depth, maxDepth, found)
				}
			}
		case fd.IsMap():
			val.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				kp := fmt.Sprintf("%s[%q]", p, k.String())
				checkString(k.String(), kp, found)
				if *found == nil && fd.MapValue().Kind() == protoreflect.MessageKind {
					walkLimits(v.Message(), kp, depth, maxDepth, found)
				} else if *found == nil && fd.MapValue().Kind() == protoreflect.StringKind {
					checkString(v.String(), kp, found)
				}
				return *found == nil
			})
		case fd.Kind() == protoreflect.StringKind:
			checkString(val.String(), p, found)
		case fd.Kind() == protoreflect.MessageKind:
			walkLimits(val.Message(), p, depth, maxDepth, found)
		}
		return *found == nil
	})
}

func checkString(s, path string, found **toolsvcv1.FieldViolation) {
	if strings.IndexByte(s, 0) >= 0 {
		*found = &toolsvcv1.FieldViolation{Field: path, Rule: "string.no_nul", Message: "must not contain NUL (\\u0000) characters"}
	}
}
