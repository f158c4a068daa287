package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// Rule ids of the checklist (docs/CONTRACTS.md, "The checklist"), each a
// rule a registry can check at build time.
const (
	RuleOptionPresent          = "tool.option_present"
	RuleUnary                  = "tool.unary"
	RuleDescriptor             = "tool.descriptor"
	RuleContract               = "tool.contract" // a protovalidate rule of the Tool option; the rule id follows
	RuleNameVerbNoun           = "name.verb_noun"
	RuleNameUnique             = "name.unique"
	RuleDescriptionSentences   = "description.sentences"
	RuleTagsUnique             = "tags.unique"
	RuleMutationSideEffect     = "category.mutation_side_effect"
	RuleDestructiveSideEffect  = "annotations.destructive_side_effect"
	RuleResponseShape          = "result.shape"
	RuleRequestName            = "request.name"
	RuleExampleParams          = "examples.params_valid"
	RuleExampleExpected        = "examples.expected_json"
	RuleDeprecationWindow      = "deprecation.removal_90_days"
	RuleDeprecationReplacement = "deprecation.replacement_exists"
	RuleSchema                 = "schema.derivable"
)

// Violation is one broken rule.
type Violation struct {
	Tool    string // tool name, when known
	Method  string // full gRPC method
	Rule    string // rule id
	Message string
}

// String renders the violation for logs and `toolsvc lint`.
func (v Violation) String() string {
	name := v.Tool
	if name == "" {
		name = v.Method
	}
	return fmt.Sprintf("%s: [%s] %s", name, v.Rule, v.Message)
}

// Check validates one tool definition (the checklist of docs/CONTRACTS.md): the
// protovalidate rules of the Tool option (name pattern, description length,
// examples and tags present, permissions format, cache_ttl iff cacheable,
// query tools idempotent and side-effect free, ...) and the rules that need
// the descriptor. It does not check rules spanning tools; New does.
func Check(md protoreflect.MethodDescriptor, spec *toolsvcv1.Tool, validator protovalidate.Validator) []Violation {
	var vs []Violation
	add := func(rule, format string, args ...any) {
		vs = append(vs, Violation{Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	if err := validator.Validate(spec); err != nil {
		var ve *protovalidate.ValidationError
		if errors.As(err, &ve) {
			for _, v := range ve.Violations {
				field := protovalidate.FieldPathString(v.Proto.GetField())
				rule := v.Proto.GetRuleId()
				msg := v.Proto.GetMessage()
				if field != "" {
					msg = field + ": " + msg
				}
				add(RuleContract+"."+rule, "%s", msg)
			}
		} else {
			add(RuleContract, "%v", err)
		}
	}
	if name := spec.GetName(); strings.Count(name, "-") < 1 {
		add(RuleNameVerbNoun, "name %q must be {verb}-{noun}", name)
	} else if verb := verbOf(name); Verbs[verb] == "" {
		add(RuleNameVerb, "name %q starts with %q, which is not a listed verb (docs/CONTRACTS.md, \"Tool names\": %s)", name, verb, strings.Join(VerbList(), ", "))
	}
	if d := spec.GetDescription(); len(d) >= 50 && !strings.ContainsAny(d, ".!?") {
		add(RuleDescriptionSentences, "description must be plain sentences saying what the tool does, when to use it and what it returns")
	}
	seen := map[string]bool{}
	for _, tag := range spec.GetTags() {
		if seen[tag] {
			add(RuleTagsUnique, "tag %q is listed twice", tag)
		}
		seen[tag] = true
	}
	if spec.GetCategory() == "mutation" && !spec.GetSideEffect() {
		add(RuleMutationSideEffect, "a mutation must declare side_effect: true")
	}
	if spec.GetDestructive() && !spec.GetSideEffect() {
		add(RuleDestructiveSideEffect, "a destructive tool must declare side_effect: true")
	}
	if want := md.Name() + "Request"; md.Input().Name() != want {
		add(RuleRequestName, "request message must be named %s", want)
	}
	vs = append(vs, checkResponseShape(md.Output())...)
	if d := spec.GetDeprecated(); d != nil {
		since, err1 := time.Parse(time.DateOnly, d.GetSinceDate())
		removal, err2 := time.Parse(time.DateOnly, d.GetRemovalDate())
		switch {
		case err1 != nil || err2 != nil:
			add(RuleDeprecationWindow, "since_date and removal_date must be ISO 8601 dates (YYYY-MM-DD)")
		case removal.Sub(since) < 90*24*time.Hour:
			add(RuleDeprecationWindow, "removal_date %s must be at least 90 days after since_date %s", d.GetRemovalDate(), d.GetSinceDate())
		}
	}
	return vs
}

// checkResponseShape requires {data, agent_hints, metadata}: the contract's
// ToolResult, typed.
func checkResponseShape(out protoreflect.MessageDescriptor) []Violation {
	var vs []Violation
	want := []struct {
		name protoreflect.Name
		msg  protoreflect.FullName // "" = any message
	}{
		{"data", ""},
		{"agent_hints", (&toolsvcv1.AgentHints{}).ProtoReflect().Descriptor().FullName()},
		{"metadata", (&toolsvcv1.ResultMetadata{}).ProtoReflect().Descriptor().FullName()},
	}
	for _, w := range want {
		fd := out.Fields().ByName(w.name)
		switch {
		case fd == nil:
			vs = append(vs, Violation{Rule: RuleResponseShape, Message: fmt.Sprintf("response %s has no %s field", out.Name(), w.name)})
		case fd.Kind() != protoreflect.MessageKind || fd.IsList() || fd.IsMap():
			vs = append(vs, Violation{Rule: RuleResponseShape, Message: fmt.Sprintf("response field %s must be a singular message", w.name)})
		case w.msg != "" && fd.Message().FullName() != w.msg:
			vs = append(vs, Violation{Rule: RuleResponseShape, Message: fmt.Sprintf("response field %s must be %s", w.name, w.msg)})
		}
	}
	return vs
}

// decodeExamples parses every example: params must be a valid request
// (strict protojson, then protovalidate) and the expectation a JSON object.
func decodeExamples(spec *toolsvcv1.Tool, in protoreflect.MessageType, validator protovalidate.Validator, check func(proto.Message) error) ([]Example, []Violation) {
	var (
		out []Example
		vs  []Violation
	)
	for i, ex := range spec.GetExamples() {
		e := Example{Description: ex.GetDescription(), ErrorCode: ex.GetExpectedErrorCode()}
		if err := json.Unmarshal([]byte(ex.GetParamsJson()), &e.ParamsJSON); err != nil || e.ParamsJSON == nil {
			vs = append(vs, Violation{Rule: RuleExampleParams, Message: fmt.Sprintf("examples[%d].params_json is not a JSON object", i)})
			continue
		}
		msg := in.New().Interface()
		if err := protojson.Unmarshal([]byte(ex.GetParamsJson()), msg); err != nil {
			vs = append(vs, Violation{Rule: RuleExampleParams, Message: fmt.Sprintf("examples[%d].params_json does not decode: %v", i, err)})
			continue
		}
		err := validator.Validate(msg)
		if err == nil && check != nil {
			err = check(msg)
		}
		if err != nil && e.ErrorCode != "INVALID_INPUT" {
			vs = append(vs, Violation{Rule: RuleExampleParams, Message: fmt.Sprintf("examples[%d].params_json is invalid: %v", i, err)})
			continue
		}
		e.Params = msg
		if err := json.Unmarshal([]byte(ex.GetExpectedResultJson()), &e.Expected); err != nil || e.Expected == nil {
			vs = append(vs, Violation{Rule: RuleExampleExpected, Message: fmt.Sprintf("examples[%d].expected_result_json is not a JSON object", i)})
			continue
		}
		out = append(out, e)
	}
	return out, vs
}

// Lint returns the checklist report of every tool of services, violations
// included, without refusing anything: what `toolsvc lint` prints.
func Lint(services []Service, opts ...Option) (tools []*Tool, violations []Violation) {
	r, err := New(services, opts...)
	if err != nil {
		if ce, ok := AsCheckError(err); ok {
			return nil, ce.Violations
		}
		return nil, []Violation{{Rule: RuleDescriptor, Message: err.Error()}}
	}
	return r.All(), nil
}
