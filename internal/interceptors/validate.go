package interceptors

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// validateInput runs protovalidate on the request before the handler:
// the RPC's own request, and for CallTool also the decoded tool request.
// Violations become INVALID_INPUT with the JSON path of every field and the
// rule it broke, which an agent can act on.
func validateInput(v protovalidate.Validator, maxJSONDepth int) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
		if m, ok := req.(proto.Message); ok && (c.Tool == nil || c.Generic) {
			if err := check(v, m); err != nil {
				return nil, err
			}
		}
		if c.Tool != nil && c.Request != nil {
			if err := limits(c.Request.ProtoReflect(), maxJSONDepth); err != nil {
				return nil, err
			}
			if err := check(v, c.Request); err != nil {
				return nil, err
			}
			// A tool defined by JSON Schemas checks its request against them.
			if c.Tool.CheckInput != nil {
				if err := c.Tool.CheckInput(c.Request); err != nil {
					return nil, err
				}
			}
		}
		return next(ctx, req)
	}
}

func check(v protovalidate.Validator, m proto.Message) error {
	err := v.Validate(m)
	if err == nil {
		return nil
	}
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) {
		return toolerr.Wrap(err, toolerr.Internal, "could not validate the request")
	}
	return InvalidInput(m.ProtoReflect().Descriptor(), ve.ToProto())
}

// InvalidInput turns protovalidate violations into INVALID_INPUT.
func InvalidInput(md protoreflect.MessageDescriptor, vs *validate.Violations) *toolerr.Error {
	e := &toolerr.Error{Code: toolerr.InvalidInput}
	var parts []string
	for _, v := range vs.GetViolations() {
		field := jsonPath(md, v.GetField())
		if field == "" {
			field = "(request)"
		}
		msg := violationMessage(v)
		e.Violations = append(e.Violations, &toolsvcv1.FieldViolation{Field: field, Rule: v.GetRuleId(), Message: msg})
		parts = append(parts, fmt.Sprintf("%s: %s", field, msg))
	}
	e.Message = "invalid input: " + strings.Join(parts, "; ")
	return e
}

// violationMessage is protovalidate's message, but for the rules whose only
// failure is an empty value — a string of at least 1 character, a list of
// at least 1 item — it says what the caller did: left it out.
// ("value length must be at least 1 characters" read as a puzzle.)
func violationMessage(v *validate.Violation) string {
	switch msg := v.GetMessage(); {
	case v.GetRuleId() == "string.min_len" && strings.HasSuffix(msg, "at least 1 characters"):
		return "is required (a non-empty string)"
	case v.GetRuleId() == "string.min_bytes" && strings.HasSuffix(msg, "at least 1 bytes"):
		return "is required (a non-empty string)"
	case v.GetRuleId() == "repeated.min_items" && strings.HasSuffix(msg, "at least 1 item(s)"):
		return "is required (at least one item)"
	default:
		return msg
	}
}

// jsonPath renders a protovalidate field path with JSON (lowerCamelCase)
// names, e.g. files[2].path, as agents and REST callers name fields.
func jsonPath(md protoreflect.MessageDescriptor, p *validate.FieldPath) string {
	var b strings.Builder
	for _, el := range p.GetElements() {
		var fd protoreflect.FieldDescriptor
		if md != nil {
			fd = md.Fields().ByNumber(protoreflect.FieldNumber(el.GetFieldNumber()))
		}
		name := el.GetFieldName()
		if fd != nil {
			name = fd.JSONName()
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(name)
		switch s := el.GetSubscript().(type) {
		case *validate.FieldPathElement_Index:
			fmt.Fprintf(&b, "[%d]", s.Index)
		case *validate.FieldPathElement_StringKey:
			fmt.Fprintf(&b, "[%q]", s.StringKey)
		case *validate.FieldPathElement_IntKey:
			fmt.Fprintf(&b, "[%d]", s.IntKey)
		case *validate.FieldPathElement_UintKey:
			fmt.Fprintf(&b, "[%d]", s.UintKey)
		case *validate.FieldPathElement_BoolKey:
			fmt.Fprintf(&b, "[%t]", s.BoolKey)
		}
		md = nil
		if fd != nil && fd.Message() != nil {
			md = fd.Message()
			if fd.IsMap() {
				md = fd.MapValue().Message()
			}
		}
	}
	return b.String()
}
