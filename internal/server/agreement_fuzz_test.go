package server_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"buf.build/go/protovalidate"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"

	ticketsv1 "github.com/toolsvc/toolsvc/examples/upstreams/tickets/gen/tickets/v1"
	"github.com/toolsvc/toolsvc/gen/descriptor"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/schema"
	"github.com/toolsvc/toolsvc/internal/server"
)

// agreement is what the fuzz target checks each input against: every tool
// of the in-tree contracts and of the example gRPC upstream (whose
// schemas are derived the same way), its input schema compiled with the
// validator toolsvc uses for upstream MCP tools (santhosh-tekuri/jsonschema,
// formats asserted), and the one protovalidate validator.
type agreement struct {
	tools     []*registry.Tool
	schemas   []*jsonschema.Schema
	validator protovalidate.Validator
}

var (
	agreementOnce sync.Once
	agreementEnv  agreement
	agreementErr  error
)

func loadAgreement(tb testing.TB) agreement {
	tb.Helper()
	agreementOnce.Do(func() {
		reg, err := registry.New(server.Contracts(), registry.WithSourceInfo(descriptor.Set))
		if err != nil {
			agreementErr = err
			return
		}
		env := agreement{tools: reg.All()}
		// The example gRPC upstream's tools: toolsvc derives their input
		// schemas from the request messages the same way (the envelope it
		// wraps their responses in is irrelevant here).
		methods := ticketsv1.File_tickets_v1_tickets_proto.Services().Get(0).Methods()
		for i := range methods.Len() {
			md := methods.Get(i)
			spec, _ := proto.GetExtension(md.Options(), toolsvcv1.E_Tool).(*toolsvcv1.Tool)
			if spec.GetName() == "" {
				continue
			}
			in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
			if err != nil {
				agreementErr = err
				return
			}
			sch, err := schema.Derive(md.Input(), schema.Options{})
			if err != nil {
				agreementErr = err
				return
			}
			env.tools = append(env.tools, &registry.Tool{Name: spec.GetName(), Version: spec.GetVersion(), Input: in, InputSchema: sch})
		}
		for _, tool := range env.tools {
			raw, _ := json.Marshal(tool.InputSchema)
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
			if err != nil {
				agreementErr = err
				return
			}
			c := jsonschema.NewCompiler()
			c.AssertFormat()
			url := "urn:toolsvc:" + tool.Name
			if err := c.AddResource(url, doc); err != nil {
				agreementErr = err
				return
			}
			sch, err := c.Compile(url)
			if err != nil {
				agreementErr = fmt.Errorf("%s: %w", tool.Name, err)
				return
			}
			env.schemas = append(env.schemas, sch)
		}
		env.validator, agreementErr = protovalidate.New()
		agreementEnv = env
	})
	if agreementErr != nil {
		tb.Fatal(agreementErr)
	}
	return agreementEnv
}

// FuzzSchemaAgreesWithValidator generates, from the bytes it is given, a
// JSON input shaped by one tool's input schema (values valid, at the
// bounds, just past them, of the wrong length, unknown properties,
// required fields left out) and checks that the published schema and the
// server's decoding plus protovalidate agree: both accept it or both
// refuse it. The one tolerated difference is a rule JSON Schema cannot
// express (a CEL rule), which the schema states in a description: the
// schema then accepts what the server refuses, and says why.
func FuzzSchemaAgreesWithValidator(f *testing.F) {
	env := loadAgreement(f)
	for i := range env.tools {
		f.Add(uint8(i), []byte{})
		f.Add(uint8(i), []byte{0xff, 0xff, 0xff, 0xff})
		f.Add(uint8(i), []byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c"))
		f.Add(uint8(i), bytes.Repeat([]byte{0x80, 0x13, 0x37}, 8))
	}
	f.Fuzz(func(t *testing.T, pick uint8, data []byte) {
		i := int(pick) % len(env.tools)
		tool := env.tools[i]
		g := &gen{data: data}
		v := g.value(tool.InputSchema, 0)
		raw, err := json.Marshal(v)
		if err != nil {
			t.Skip()
		}
		checkAgreement(t, env, i, raw)
	})
}

func checkAgreement(t *testing.T, env agreement, i int, raw []byte) {
	t.Helper()
	tool := env.tools[i]
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: generated JSON does not parse: %v", tool.Name, err)
	}
	schemaErr := env.schemas[i].Validate(inst)

	msg := tool.Input.New().Interface()
	serverErr := protojson.UnmarshalOptions{}.Unmarshal(raw, msg)
	if serverErr == nil {
		serverErr = env.validator.Validate(msg)
	}
	if serverErr == nil && tool.CheckInput != nil {
		serverErr = tool.CheckInput(msg)
	}
	switch {
	case schemaErr == nil && serverErr != nil:
		if documented(tool.InputSchema, serverErr) {
			return
		}
		t.Fatalf("%s: the schema accepts %s, the server refuses it: %v", tool.Name, raw, serverErr)
	case schemaErr != nil && serverErr == nil:
		t.Fatalf("%s: the server accepts %s, the schema refuses it: %v", tool.Name, raw, schemaErr)
	}
}

// documented reports whether every violation of err is a CEL rule whose
// message the schema states in a description.
func documented(s schema.Schema, err error) bool {
	var ve *protovalidate.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	text, _ := json.Marshal(s)
	for _, v := range ve.Violations {
		p := v.Proto
		if !celRule(p.GetRuleId()) {
			return false // a standard rule the schema should carry as a keyword
		}
		if p.GetMessage() == "" || !bytes.Contains(text, []byte(jsonEscape(p.GetMessage()))) {
			return false
		}
	}
	return true
}

// celRule reports whether a rule id belongs to a contract's own CEL rule
// rather than to one of protovalidate's standard rules, whose ids start
// with the rule type ("string.", "int32.", "repeated.", "required", ...).
func celRule(id string) bool {
	for _, std := range []string{"string.", "bytes.", "int32.", "int64.", "uint32.", "uint64.", "sint32.", "sint64.",
		"fixed32.", "fixed64.", "sfixed32.", "sfixed64.", "float.", "double.", "bool.", "enum.", "repeated.", "map.",
		"duration.", "timestamp.", "any.", "field_mask.", "required"} {
		if strings.HasPrefix(id, std) {
			return false
		}
	}
	return true
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// gen turns fuzz bytes into choices; past the end every choice is 0, the
// schema's minimal valid value.
type gen struct {
	data []byte
	pos  int
}

func (g *gen) byte() byte {
	if g.pos >= len(g.data) {
		return 0
	}
	b := g.data[g.pos]
	g.pos++
	return b
}

func (g *gen) value(s schema.Schema, depth int) any {
	if depth > 6 {
		return nil
	}
	choice := g.byte()
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		switch choice % 5 {
		case 3:
			return "NOT_A_VALUE"
		case 4:
			if typ, _ := s["type"].(string); typ == "string" {
				return ""
			}
		}
		return enum[int(g.byte())%len(enum)]
	}
	switch s["type"] {
	case "object":
		return g.object(s, choice, depth)
	case "array":
		items, _ := s["items"].(map[string]any)
		n := int(choice % 4)
		if maxItems, ok := num(s["maxItems"]); ok && choice%16 == 15 && maxItems < 8 {
			n = int(maxItems) + 1
		}
		out := make([]any, 0, n)
		for range n {
			out = append(out, g.value(items, depth+1))
		}
		return out
	case "string":
		return g.string(s, choice)
	case "integer":
		return g.integer(s, choice)
	case "number":
		switch choice % 4 {
		case 0:
			return 0.5
		case 1:
			if v, ok := num(s["minimum"]); ok {
				return v - 0.25
			}
		case 2:
			if v, ok := num(s["maximum"]); ok {
				return v + 0.25
			}
		}
		return float64(int8(g.byte())) / 4
	case "boolean":
		return choice%2 == 1
	}
	m, _ := schema.Minimal(s)
	return m
}

func (g *gen) object(s schema.Schema, choice byte, depth int) any {
	props, _ := s["properties"].(map[string]any)
	required := schema.Required(s)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	out := map[string]any{}
	for _, name := range names {
		req := slices.Contains(required, name)
		b := g.byte()
		switch {
		case req && b%8 == 7: // a required field left out
			continue
		case !req && b%2 == 0: // an optional field left out
			continue
		}
		sub, _ := props[name].(map[string]any)
		v := g.value(sub, depth+1)
		if !req && zero(v) {
			// protojson's canonical form omits a zero value, and the
			// schema describes that form (schema.Derive).
			continue
		}
		out[name] = v
	}
	if choice%32 == 31 {
		out["notAField"] = "x"
	}
	return out
}

func zero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case int64:
		return x == 0
	case bool:
		return !x
	case []any:
		return len(x) == 0
	}
	return false
}

var formatValues = map[string][]string{
	"date-time": {"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123+02:00", "2026-13-02T03:04:05Z", "yesterday", "2026-01-02"},
}

func (g *gen) string(s schema.Schema, choice byte) any {
	if f, ok := s["format"].(string); ok {
		if vals := formatValues[f]; len(vals) > 0 {
			return vals[int(choice)%len(vals)]
		}
	}
	minimal, _ := schema.Minimal(schema.Schema{"type": "string", "pattern": s["pattern"], "minLength": s["minLength"], "maxLength": s["maxLength"]})
	if s["pattern"] == nil {
		minimal, _ = schema.Minimal(schema.Schema{"type": "string", "minLength": s["minLength"]})
	}
	base, _ := minimal.(string)
	switch choice % 6 {
	case 0:
		return base
	case 1:
		return ""
	case 2: // just past maxLength
		if n, ok := num(s["maxLength"]); ok && n < 5000 {
			return base + strings.Repeat("a", int(n)+1-len([]rune(base)))
		}
		return base + "a"
	case 3: // just under minLength
		if n, ok := num(s["minLength"]); ok && n > 0 {
			return strings.Repeat("a", int(n)-1)
		}
		return base
	case 4: // the valid value with one character changed
		r := []rune(base)
		if len(r) > 0 {
			swaps := []rune(" A-_.9zé\u4e16")
			r[int(g.byte())%len(r)] = swaps[int(g.byte())%len(swaps)]
		}
		return string(r)
	}
	n := int(g.byte() % 24)
	var b strings.Builder
	for range n {
		const alphabet = "abz09_-.A /\x00mem"
		b.WriteByte(alphabet[int(g.byte())%len(alphabet)])
	}
	return b.String()
}

func (g *gen) integer(s schema.Schema, choice byte) any {
	lo, hasLo := num(s["minimum"])
	if v, ok := num(s["exclusiveMinimum"]); ok {
		lo, hasLo = v+1, true
	}
	hi, hasHi := num(s["maximum"])
	if v, ok := num(s["exclusiveMaximum"]); ok {
		hi, hasHi = v-1, true
	}
	switch choice % 7 {
	case 1:
		if hasLo {
			return int64(lo)
		}
	case 2:
		if hasLo && lo > math.MinInt64/2 {
			return int64(lo) - 1
		}
	case 3:
		if hasHi {
			return int64(hi)
		}
	case 4:
		if hasHi && hi < math.MaxInt64/2 {
			return int64(hi) + 1
		}
	case 5:
		return int64(int16(uint16(g.byte())<<8 | uint16(g.byte())))
	}
	return int64(0)
}

func num(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	case int:
		return float64(n), true
	case uint32:
		return float64(n), true
	case int32:
		return float64(n), true
	}
	return 0, false
}
