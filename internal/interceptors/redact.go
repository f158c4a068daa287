package interceptors

import (
	"log/slog"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// redactedFields are never logged: contents and anything that may hold a
// secret (docs/CONTRACTS.md: log input parameters; DESIGN: no secret is ever logged).
var redactedFields = map[string]bool{
	"content": true, "metadata": true, "arguments": true, "query": true,
	"password": true, "token": true, "secret": true, "key": true, "authorization": true,
}

// redacted logs a request with content and secret fields replaced.
type redacted struct{ m proto.Message }

// LogValue implements slog.LogValuer; it is only evaluated when the log
// line is written.
func (r redacted) LogValue() slog.Value {
	if r.m == nil {
		return slog.StringValue("")
	}
	c := proto.Clone(r.m)
	redact(c.ProtoReflect(), 0)
	b, err := protojson.MarshalOptions{}.Marshal(c)
	if err != nil {
		return slog.StringValue("<unloggable>")
	}
	return slog.StringValue(string(b))
}

func redact(m protoreflect.Message, depth int) {
	if depth > 8 {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := strings.ToLower(string(fd.Name()))
		switch {
		case redactedFields[name] && fd.Kind() == protoreflect.StringKind && !fd.IsList():
			m.Set(fd, protoreflect.ValueOfString("[redacted]"))
		case redactedFields[name]:
			m.Clear(fd)
		case fd.IsMap() && fd.MapValue().Kind() == protoreflect.MessageKind:
			// A JSON object (google.protobuf.Struct: the arguments of an
			// upstream's tool or of set-upstream-credential): its secret
			// keys go, the rest is redacted within.
			mp := v.Map()
			var drop []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if redactedFields[strings.ToLower(k.String())] {
					drop = append(drop, k)
				} else {
					redact(mv.Message(), depth+1)
				}
				return true
			})
			for _, k := range drop {
				mp.Clear(k)
			}
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				redact(l.Get(i).Message(), depth+1)
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			redact(v.Message(), depth+1)
		}
		return true
	})
}
