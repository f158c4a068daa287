package schema

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// applyFieldRules turns the protovalidate rules of a field into keywords of
// its schema s (the array or map schema for repeated and map fields).
func applyFieldRules(s Schema, fd protoreflect.FieldDescriptor, r *validate.FieldRules) error {
	if r == nil {
		return nil
	}
	celNotes(s, r)
	switch {
	case fd.IsList():
		if r.WhichType() == validate.FieldRules_Type_not_set_case {
			return nil
		}
		rep := r.GetRepeated()
		if rep == nil {
			return fmt.Errorf("%w: %s rules on a repeated field", ErrRuleMismatch, ruleName(r))
		}
		if rep.HasMinItems() {
			s["minItems"] = rep.GetMinItems()
		}
		if rep.HasMaxItems() {
			s["maxItems"] = rep.GetMaxItems()
		}
		if rep.GetUnique() {
			s["uniqueItems"] = true
		}
		items, _ := s["items"].(Schema)
		return applyValueRules(items, fd, rep.GetItems())
	case fd.IsMap():
		if r.WhichType() == validate.FieldRules_Type_not_set_case {
			return nil
		}
		m := r.GetMap()
		if m == nil {
			return fmt.Errorf("%w: %s rules on a map field", ErrRuleMismatch, ruleName(r))
		}
		if m.HasMinPairs() {
			s["minProperties"] = m.GetMinPairs()
		}
		if m.HasMaxPairs() {
			s["maxProperties"] = m.GetMaxPairs()
		}
		if keys := m.GetKeys(); keys != nil {
			names, _ := s["propertyNames"].(Schema)
			if names == nil {
				names = Schema{"type": "string"}
				s["propertyNames"] = names
			}
			if err := applyValueRules(names, fd.MapKey(), keys); err != nil {
				return err
			}
		}
		values, _ := s["additionalProperties"].(Schema)
		return applyValueRules(values, fd.MapValue(), m.GetValues())
	default:
		return applyTypeRules(s, fd, r)
	}
}

// applyValueRules applies the rules of one element: a repeated field's item,
// a map key or a map value.
func applyValueRules(s Schema, fd protoreflect.FieldDescriptor, r *validate.FieldRules) error {
	if r == nil || s == nil || r.GetIgnore() == validate.Ignore_IGNORE_ALWAYS {
		return nil
	}
	celNotes(s, r)
	return applyTypeRules(s, fd, r)
}

// applyTypeRules applies the type-specific rules (string, int32, ...) of a
// single value whose descriptor is fd.
func applyTypeRules(s Schema, fd protoreflect.FieldDescriptor, r *validate.FieldRules) error {
	c := r.WhichType()
	if c == validate.FieldRules_Type_not_set_case {
		return nil
	}
	if !ruleMatches(c, fd) {
		return fmt.Errorf("%w: %s rules on a %s field", ErrRuleMismatch, ruleName(r), kindName(fd))
	}
	switch c {
	case validate.FieldRules_String__case:
		return applyString(s, r.GetString())
	case validate.FieldRules_Bytes_case:
		applyBytes(s, r.GetBytes())
	case validate.FieldRules_Bool_case:
		if r.GetBool().HasConst() {
			s["const"] = r.GetBool().GetConst()
		}
	case validate.FieldRules_Enum_case:
		return applyEnum(s, fd.Enum(), r.GetEnum())
	case validate.FieldRules_Any_case:
		applyAny(s, r.GetAny())
	case validate.FieldRules_Duration_case:
		applyDuration(s, r.GetDuration())
	case validate.FieldRules_Timestamp_case:
		applyTimestamp(s, r.GetTimestamp())
	case validate.FieldRules_FieldMask_case:
		fm := r.GetFieldMask()
		if fm.HasConst() {
			addNote(s, "Must be exactly "+strings.Join(fm.GetConst().GetPaths(), ",")+".")
		}
		if len(fm.GetIn()) > 0 {
			addNote(s, "Paths must be within: "+strings.Join(fm.GetIn(), ", ")+".")
		}
		if len(fm.GetNotIn()) > 0 {
			addNote(s, "Paths must not be within: "+strings.Join(fm.GetNotIn(), ", ")+".")
		}
	default: // the twelve numeric rule messages share field names
		applyNumeric(s, numericRules(r).ProtoReflect())
	}
	return nil
}

// ruleMatches reports whether rules of case c may sit on a value of fd's
// type, as protovalidate requires.
func ruleMatches(c any, fd protoreflect.FieldDescriptor) bool {
	kind := fd.Kind()
	if fd.Message() != nil {
		if k, ok := wrapperKind(fd.Message()); ok {
			kind = k
		}
	}
	var msg protoreflect.FullName
	if fd.Message() != nil {
		msg = fd.Message().FullName()
	}
	switch c {
	case validate.FieldRules_Float_case:
		return kind == protoreflect.FloatKind
	case validate.FieldRules_Double_case:
		return kind == protoreflect.DoubleKind
	case validate.FieldRules_Int32_case:
		return kind == protoreflect.Int32Kind
	case validate.FieldRules_Int64_case:
		return kind == protoreflect.Int64Kind
	case validate.FieldRules_Uint32_case:
		return kind == protoreflect.Uint32Kind
	case validate.FieldRules_Uint64_case:
		return kind == protoreflect.Uint64Kind
	case validate.FieldRules_Sint32_case:
		return kind == protoreflect.Sint32Kind
	case validate.FieldRules_Sint64_case:
		return kind == protoreflect.Sint64Kind
	case validate.FieldRules_Fixed32_case:
		return kind == protoreflect.Fixed32Kind
	case validate.FieldRules_Fixed64_case:
		return kind == protoreflect.Fixed64Kind
	case validate.FieldRules_Sfixed32_case:
		return kind == protoreflect.Sfixed32Kind
	case validate.FieldRules_Sfixed64_case:
		return kind == protoreflect.Sfixed64Kind
	case validate.FieldRules_Bool_case:
		return kind == protoreflect.BoolKind
	case validate.FieldRules_String__case:
		return kind == protoreflect.StringKind
	case validate.FieldRules_Bytes_case:
		return kind == protoreflect.BytesKind
	case validate.FieldRules_Enum_case:
		return kind == protoreflect.EnumKind
	case validate.FieldRules_Any_case:
		return msg == "google.protobuf.Any"
	case validate.FieldRules_Duration_case:
		return msg == "google.protobuf.Duration"
	case validate.FieldRules_Timestamp_case:
		return msg == "google.protobuf.Timestamp"
	case validate.FieldRules_FieldMask_case:
		return msg == "google.protobuf.FieldMask"
	}
	return false
}

// numericRules returns the numeric rule message set in r.
func numericRules(r *validate.FieldRules) interface {
	ProtoReflect() protoreflect.Message
} {
	switch r.WhichType() {
	case validate.FieldRules_Float_case:
		return r.GetFloat()
	case validate.FieldRules_Double_case:
		return r.GetDouble()
	case validate.FieldRules_Int32_case:
		return r.GetInt32()
	case validate.FieldRules_Int64_case:
		return r.GetInt64()
	case validate.FieldRules_Uint32_case:
		return r.GetUint32()
	case validate.FieldRules_Uint64_case:
		return r.GetUint64()
	case validate.FieldRules_Sint32_case:
		return r.GetSint32()
	case validate.FieldRules_Sint64_case:
		return r.GetSint64()
	case validate.FieldRules_Fixed32_case:
		return r.GetFixed32()
	case validate.FieldRules_Fixed64_case:
		return r.GetFixed64()
	case validate.FieldRules_Sfixed32_case:
		return r.GetSfixed32()
	default:
		return r.GetSfixed64()
	}
}

// applyNumeric applies const/lt/lte/gt/gte/in/not_in/finite, read by name
// because the twelve numeric rule messages share them. 32-bit integers and
// floats are JSON numbers and get keywords; 64-bit integers are JSON strings
// in protojson, so their bounds can only be notes.
func applyNumeric(s Schema, m protoreflect.Message) {
	get := func(name protoreflect.Name) (any, bool) {
		fd := m.Descriptor().Fields().ByName(name)
		if fd == nil || !m.Has(fd) {
			return nil, false
		}
		return jsonNumber(m.Get(fd).Interface()), true
	}
	list := func(name protoreflect.Name) []any {
		fd := m.Descriptor().Fields().ByName(name)
		if fd == nil || !m.Has(fd) {
			return nil
		}
		l := m.Get(fd).List()
		out := make([]any, l.Len())
		for i := range l.Len() {
			out[i] = jsonNumber(l.Get(i).Interface())
		}
		return out
	}
	asJSONString := s["type"] == "string"
	toSchema := func(v any) any {
		if asJSONString {
			return fmt.Sprint(v)
		}
		return v
	}

	if v, ok := get("const"); ok {
		s["const"] = toSchema(v)
	}
	if in := list("in"); len(in) > 0 {
		enum := make([]any, len(in))
		for i, v := range in {
			enum[i] = toSchema(v)
		}
		s["enum"] = enum
	}
	if out := list("not_in"); len(out) > 0 {
		addNote(s, "Must not be one of: "+joinValues(out)+".")
	}
	if v, ok := get("finite"); ok && v == true {
		addNote(s, "Must be finite.")
	}

	gt, hasGt := get("gt")
	gte, hasGte := get("gte")
	lt, hasLt := get("lt")
	lte, hasLte := get("lte")
	lowKey, low, hasLow := "minimum", gte, hasGte
	if hasGt {
		lowKey, low, hasLow = "exclusiveMinimum", gt, true
	}
	highKey, high, hasHigh := "maximum", lte, hasLte
	if hasLt {
		highKey, high, hasHigh = "exclusiveMaximum", lt, true
	}
	lowText := map[string]string{"minimum": ">=", "exclusiveMinimum": ">"}[lowKey]
	highText := map[string]string{"maximum": "<=", "exclusiveMaximum": "<"}[highKey]

	if hasLow && hasHigh && !below(low, high, lowKey == "minimum" && highKey == "maximum") {
		// protovalidate reads an inverted range as "outside of": a union.
		addNote(s, fmt.Sprintf("Must be %s %v or %s %v.", lowText, low, highText, high))
		return
	}
	if asJSONString {
		if hasLow {
			addNote(s, fmt.Sprintf("Must be %s %v.", lowText, low))
			if signOf(low) >= 0 && s["pattern"] == signedIntPattern {
				s["pattern"] = unsignedIntPattern // no sign: the one bound a pattern can carry
			}
		}
		if hasHigh {
			addNote(s, fmt.Sprintf("Must be %s %v.", highText, high))
		}
		return
	}
	if hasLow {
		delete(s, "minimum")
		s[lowKey] = low
	}
	if hasHigh {
		delete(s, "maximum")
		s[highKey] = high
	}
}

// below reports whether low < high (low <= high when inclusive), comparing
// in the values' own domain so that 64-bit bounds stay exact.
func below(low, high any, inclusive bool) bool {
	cmp := 0
	switch l := low.(type) {
	case int64:
		h := high.(int64)
		cmp = compare(l, h)
	case uint64:
		h := high.(uint64)
		cmp = compare(l, h)
	case float64:
		h := high.(float64)
		cmp = compare(l, h)
	}
	if inclusive {
		return cmp <= 0
	}
	return cmp < 0
}

func compare[T int64 | uint64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// jsonNumber widens a numeric rule value to int64, uint64 or float64. A
// float32 is converted through its shortest decimal form, so that a bound of
// 0.1 reads 0.1 (as protojson prints the field) and not 0.10000000149011612.
func jsonNumber(v any) any {
	switch v := v.(type) {
	case int32:
		return int64(v)
	case uint32:
		return uint64(v)
	case float32:
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(v), 'g', -1, 32), 64)
		return f
	}
	return v
}

// joinValues formats values for a note.
func joinValues[T any](values []T) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

// stringFormats maps protovalidate's well-known string rules to JSON Schema
// formats with the same meaning.
var stringFormats = []struct {
	set    func(*validate.StringRules) bool
	format string
}{
	{(*validate.StringRules).GetEmail, "email"},
	{(*validate.StringRules).GetHostname, "hostname"},
	{(*validate.StringRules).GetIpv4, "ipv4"},
	{(*validate.StringRules).GetIpv6, "ipv6"},
	{(*validate.StringRules).GetUri, "uri"},
	{(*validate.StringRules).GetUriRef, "uri-reference"},
	{(*validate.StringRules).GetUuid, "uuid"},
}

// stringNotes are the well-known string rules JSON Schema has no format for.
var stringNotes = []struct {
	set  func(*validate.StringRules) bool
	note string
}{
	{(*validate.StringRules).GetIp, "Must be an IPv4 or IPv6 address."},
	{(*validate.StringRules).GetAddress, "Must be a hostname or an IP address."},
	{(*validate.StringRules).GetTuuid, "Must be a UUID without dashes (32 hex digits)."},
	{(*validate.StringRules).GetIpWithPrefixlen, "Must be an IP address with a prefix length."},
	{(*validate.StringRules).GetIpv4WithPrefixlen, "Must be an IPv4 address with a prefix length."},
	{(*validate.StringRules).GetIpv6WithPrefixlen, "Must be an IPv6 address with a prefix length."},
	{(*validate.StringRules).GetIpPrefix, "Must be an IP prefix."},
	{(*validate.StringRules).GetIpv4Prefix, "Must be an IPv4 prefix."},
	{(*validate.StringRules).GetIpv6Prefix, "Must be an IPv6 prefix."},
	{(*validate.StringRules).GetHostAndPort, "Must be a host and port (host:port)."},
	{(*validate.StringRules).GetUlid, "Must be a ULID."},
	{(*validate.StringRules).GetProtobufFqn, "Must be a fully-qualified Protobuf name."},
	{(*validate.StringRules).GetProtobufDotFqn, "Must be a fully-qualified Protobuf name with a leading dot."},
}

// applyString applies string rules. JSON Schema has a single "pattern", so
// only the first of pattern, prefix, suffix and contains becomes one; the
// others become notes (they cannot be merged into one regexp without
// lookahead, which RE2 lacks).
func applyString(s Schema, r *validate.StringRules) error {
	if r.HasConst() {
		s["const"] = r.GetConst()
	}
	if r.HasLen() {
		s["minLength"] = r.GetLen()
		s["maxLength"] = r.GetLen()
	}
	if r.HasMinLen() {
		s["minLength"] = r.GetMinLen()
	}
	if r.HasMaxLen() {
		s["maxLength"] = r.GetMaxLen()
	}
	if r.HasLenBytes() {
		addNote(s, fmt.Sprintf("Must be exactly %d bytes in UTF-8.", r.GetLenBytes()))
	}
	if r.HasMinBytes() {
		addNote(s, fmt.Sprintf("Must be at least %d bytes in UTF-8.", r.GetMinBytes()))
	}
	if r.HasMaxBytes() {
		addNote(s, fmt.Sprintf("Must be at most %d bytes in UTF-8.", r.GetMaxBytes()))
	}

	patterns := []struct {
		has     bool
		pattern string
		note    string
	}{
		{r.HasPattern(), r.GetPattern(), "Must match " + r.GetPattern() + "."},
		{r.HasPrefix(), "^" + regexp.QuoteMeta(r.GetPrefix()), fmt.Sprintf("Must start with %q.", r.GetPrefix())},
		{r.HasSuffix(), regexp.QuoteMeta(r.GetSuffix()) + "$", fmt.Sprintf("Must end with %q.", r.GetSuffix())},
		{r.HasContains(), regexp.QuoteMeta(r.GetContains()), fmt.Sprintf("Must contain %q.", r.GetContains())},
	}
	for _, p := range patterns {
		if !p.has {
			continue
		}
		if _, ok := s["pattern"]; ok {
			addNote(s, p.note)
			continue
		}
		if _, err := regexp.Compile(p.pattern); err != nil {
			return fmt.Errorf("string.pattern: %w", err)
		}
		s["pattern"] = p.pattern
	}
	if r.HasNotContains() {
		addNote(s, fmt.Sprintf("Must not contain %q.", r.GetNotContains()))
	}
	if in := r.GetIn(); len(in) > 0 {
		enum := make([]any, len(in))
		for i, v := range in {
			enum[i] = v
		}
		s["enum"] = enum
	}
	if out := r.GetNotIn(); len(out) > 0 {
		addNote(s, "Must not be one of: "+joinValues(out)+".")
	}
	for _, f := range stringFormats {
		if f.set(r) {
			s["format"] = f.format
		}
	}
	for _, n := range stringNotes {
		if n.set(r) {
			addNote(s, n.note)
		}
	}
	if r.HasWellKnownRegex() {
		switch r.GetWellKnownRegex() {
		case validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_NAME:
			addNote(s, "Must be an HTTP header name.")
		case validate.KnownRegex_KNOWN_REGEX_HTTP_HEADER_VALUE:
			addNote(s, "Must be an HTTP header value.")
		}
	}
	return nil
}

// applyBytes documents bytes rules: the schema sees base64 text, so limits on
// the decoded bytes can only be notes.
func applyBytes(s Schema, r *validate.BytesRules) {
	if r.HasLen() {
		addNote(s, fmt.Sprintf("Must decode to exactly %d bytes.", r.GetLen()))
	}
	if r.HasMinLen() {
		addNote(s, fmt.Sprintf("Must decode to at least %d bytes.", r.GetMinLen()))
	}
	if r.HasMaxLen() {
		addNote(s, fmt.Sprintf("Must decode to at most %d bytes.", r.GetMaxLen()))
	}
	if r.HasPattern() {
		addNote(s, "Decoded bytes must match "+r.GetPattern()+".")
	}
	if r.HasPrefix() || r.HasSuffix() || r.HasContains() || r.HasConst() || len(r.GetIn()) > 0 || len(r.GetNotIn()) > 0 {
		addNote(s, "Decoded bytes are restricted by further server-side rules.")
	}
	switch {
	case r.GetIp():
		addNote(s, "Must be an IP address in network byte order.")
	case r.GetIpv4():
		addNote(s, "Must be an IPv4 address in network byte order.")
	case r.GetIpv6():
		addNote(s, "Must be an IPv6 address in network byte order.")
	case r.GetUuid():
		addNote(s, "Must be a 16-byte UUID.")
	}
}

// applyEnum narrows the list of enum names. defined_only needs nothing: the
// list only holds defined values already.
func applyEnum(s Schema, ed protoreflect.EnumDescriptor, r *validate.EnumRules) error {
	keep := func(protoreflect.EnumNumber) bool { return true }
	switch {
	case r.HasConst():
		keep = func(n protoreflect.EnumNumber) bool { return int32(n) == r.GetConst() }
	case len(r.GetIn()) > 0:
		keep = func(n protoreflect.EnumNumber) bool { return containsInt(r.GetIn(), int32(n)) }
	}
	notIn := r.GetNotIn()
	return filterEnum(s, ed, func(n protoreflect.EnumNumber) bool {
		return keep(n) && !containsInt(notIn, int32(n))
	})
}

// filterEnum keeps the enum names whose number satisfies keep.
func filterEnum(s Schema, ed protoreflect.EnumDescriptor, keep func(protoreflect.EnumNumber) bool) error {
	if _, ok := s["enum"]; !ok {
		return nil // google.protobuf.NullValue
	}
	var names []any
	values := ed.Values()
	for i := range values.Len() {
		if v := values.Get(i); keep(v.Number()) {
			names = append(names, string(v.Name()))
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%w: no value of %s is allowed", ErrUnsatisfiable, ed.FullName())
	}
	s["enum"] = names
	return nil
}

func containsInt(list []int32, v int32) bool { return slices.Contains(list, v) }

// applyAny restricts the "@type" of an Any.
func applyAny(s Schema, r *validate.AnyRules) {
	props, _ := s["properties"].(map[string]any)
	typeURL, _ := props["@type"].(Schema)
	if in := r.GetIn(); len(in) > 0 && typeURL != nil {
		enum := make([]any, len(in))
		for i, v := range in {
			enum[i] = v
		}
		typeURL["enum"] = enum
	}
	if out := r.GetNotIn(); len(out) > 0 {
		addNote(s, "@type must not be one of: "+joinValues(out)+".")
	}
}

// applyDuration documents duration rules: a duration is a string, so bounds
// can only be notes.
func applyDuration(s Schema, r *validate.DurationRules) {
	d := func(v *durationpb.Duration) string { return v.AsDuration().String() }
	if r.HasConst() {
		addNote(s, "Must be exactly "+d(r.GetConst())+".")
	}
	bounds := []struct {
		has bool
		op  string
		v   *durationpb.Duration
	}{
		{r.HasGt(), ">", r.GetGt()},
		{r.HasGte(), ">=", r.GetGte()},
		{r.HasLt(), "<", r.GetLt()},
		{r.HasLte(), "<=", r.GetLte()},
	}
	for _, b := range bounds {
		if b.has {
			addNote(s, fmt.Sprintf("Must be %s %s.", b.op, d(b.v)))
		}
	}
	if len(r.GetIn()) > 0 || len(r.GetNotIn()) > 0 {
		addNote(s, "Restricted to a server-side list of durations.")
	}
}

// applyTimestamp documents timestamp rules as notes.
func applyTimestamp(s Schema, r *validate.TimestampRules) {
	t := func(v *timestamppb.Timestamp) string {
		return v.AsTime().UTC().Format("2006-01-02T15:04:05.999999999Z07:00")
	}
	if r.HasConst() {
		addNote(s, "Must be exactly "+t(r.GetConst())+".")
	}
	bounds := []struct {
		has bool
		op  string
		v   *timestamppb.Timestamp
	}{
		{r.HasGt(), "after", r.GetGt()},
		{r.HasGte(), "at or after", r.GetGte()},
		{r.HasLt(), "before", r.GetLt()},
		{r.HasLte(), "at or before", r.GetLte()},
	}
	for _, b := range bounds {
		if b.has {
			addNote(s, fmt.Sprintf("Must be %s %s.", b.op, t(b.v)))
		}
	}
	if r.GetLtNow() {
		addNote(s, "Must be in the past.")
	}
	if r.GetGtNow() {
		addNote(s, "Must be in the future.")
	}
	if r.HasWithin() {
		addNote(s, "Must be within "+r.GetWithin().AsDuration().String()+" of the current time.")
	}
}

// celNotes appends the messages of CEL rules, which JSON Schema cannot
// express, so that agents still see them.
func celNotes(s Schema, r *validate.FieldRules) {
	for _, note := range celTexts(r.GetCel(), r.GetCelExpression()) {
		addNote(s, note)
	}
}

// celTexts returns one sentence per CEL rule: its message, else its id and
// expression.
func celTexts(rules []*validate.Rule, expressions []string) []string {
	var out []string
	for _, rule := range rules {
		switch {
		case rule.GetMessage() != "":
			out = append(out, rule.GetMessage())
		case rule.GetExpression() != "":
			out = append(out, fmt.Sprintf("Must satisfy %s: %s", rule.GetId(), rule.GetExpression()))
		}
	}
	for _, e := range expressions {
		out = append(out, "Must satisfy: "+e)
	}
	return out
}

// messageNotes returns the message-level rules JSON Schema cannot express:
// CEL rules and message oneof rules.
func messageNotes(md protoreflect.MessageDescriptor) ([]string, error) {
	rules, err := protovalidate.ResolveMessageRules(md)
	if err != nil {
		return nil, &DeriveError{Name: md.FullName(), Err: err}
	}
	if rules == nil {
		return nil, nil
	}
	notes := celTexts(rules.GetCel(), rules.GetCelExpression())
	for _, o := range rules.GetOneof() {
		names := make([]string, 0, len(o.GetFields()))
		for _, f := range o.GetFields() {
			if fd := md.Fields().ByName(protoreflect.Name(f)); fd != nil {
				names = append(names, fd.JSONName())
			}
		}
		verb := "At most one of %s may be set."
		if o.GetRequired() {
			verb = "Exactly one of %s must be set."
		}
		notes = append(notes, fmt.Sprintf(verb, strings.Join(names, ", ")))
	}
	return notes, nil
}

// requireNonZero adds what protovalidate's "required" means beyond presence:
// an implicit-presence field must not hold its zero value, which protojson
// would omit anyway, but an agent could still send explicitly.
func requireNonZero(s Schema, fd protoreflect.FieldDescriptor) {
	switch {
	case fd.IsList():
		if n, _ := s["minItems"].(uint64); n < 1 {
			s["minItems"] = uint64(1)
		}
	case fd.IsMap():
		if n, _ := s["minProperties"].(uint64); n < 1 {
			s["minProperties"] = uint64(1)
		}
	case fd.HasPresence():
		// Presence is the requirement; any value, zero included, is fine.
	case fd.Kind() == protoreflect.StringKind:
		if n, _ := s["minLength"].(uint64); n < 1 {
			s["minLength"] = uint64(1)
		}
	case fd.Kind() == protoreflect.EnumKind:
		// Filtering can only fail if every value is zero, and protovalidate
		// would reject such a contract too.
		_ = filterEnum(s, fd.Enum(), func(n protoreflect.EnumNumber) bool { return n != 0 })
	default:
		addNote(s, "Must not be the zero value.")
	}
}

// rejectsZero reports whether rules make the zero value of an
// implicit-presence field invalid. protovalidate applies rules to that zero
// value, and protojson never emits it, so such a field must be sent: it is
// required in protojson terms.
func rejectsZero(fd protoreflect.FieldDescriptor, r *validate.FieldRules) bool {
	if r == nil || r.GetIgnore() != validate.Ignore_IGNORE_UNSPECIFIED {
		return false
	}
	switch {
	case fd.IsList():
		return r.GetRepeated().GetMinItems() > 0
	case fd.IsMap():
		return r.GetMap().GetMinPairs() > 0
	case fd.HasPresence():
		return false // rules only apply once the field is set
	}
	switch r.WhichType() {
	case validate.FieldRules_String__case:
		return stringRejectsEmpty(r.GetString())
	case validate.FieldRules_Bytes_case:
		b := r.GetBytes()
		return b.GetMinLen() > 0 || b.GetLen() > 0 || len(b.GetConst()) > 0
	case validate.FieldRules_Bool_case:
		return r.GetBool().HasConst() && r.GetBool().GetConst()
	case validate.FieldRules_Enum_case:
		e := r.GetEnum()
		return (e.HasConst() && e.GetConst() != 0) ||
			(len(e.GetIn()) > 0 && !containsInt(e.GetIn(), 0)) || containsInt(e.GetNotIn(), 0)
	case validate.FieldRules_Type_not_set_case, validate.FieldRules_Repeated_case, validate.FieldRules_Map_case,
		validate.FieldRules_Any_case, validate.FieldRules_Duration_case, validate.FieldRules_Timestamp_case,
		validate.FieldRules_FieldMask_case:
		return false
	}
	return !numericAllowsZero(numericRules(r).ProtoReflect())
}

// stringRejectsEmpty reports whether string rules reject "".
func stringRejectsEmpty(r *validate.StringRules) bool {
	if r.GetMinLen() > 0 || r.GetLen() > 0 || r.GetMinBytes() > 0 || r.GetLenBytes() > 0 ||
		(r.HasConst() && r.GetConst() != "") || r.GetPrefix() != "" || r.GetSuffix() != "" || r.GetContains() != "" {
		return true
	}
	if in := r.GetIn(); len(in) > 0 && !slices.Contains(in, "") {
		return true
	}
	if slices.Contains(r.GetNotIn(), "") {
		return true
	}
	if r.HasPattern() {
		if re, err := regexp.Compile(r.GetPattern()); err == nil && !re.MatchString("") {
			return true
		}
	}
	for _, f := range stringFormats {
		if f.set(r) {
			return true // none of these formats admits ""
		}
	}
	return false
}

// numericAllowsZero reports whether 0 satisfies numeric rules, including
// protovalidate's inverted ("outside of") ranges.
func numericAllowsZero(m protoreflect.Message) bool {
	sign := func(name protoreflect.Name) (int, bool) {
		fd := m.Descriptor().Fields().ByName(name)
		if fd == nil || !m.Has(fd) {
			return 0, false
		}
		return signOf(jsonNumber(m.Get(fd).Interface())), true
	}
	listHasZero := func(name protoreflect.Name) (bool, bool) {
		fd := m.Descriptor().Fields().ByName(name)
		if fd == nil || !m.Has(fd) {
			return false, false
		}
		l := m.Get(fd).List()
		for i := range l.Len() {
			if signOf(jsonNumber(l.Get(i).Interface())) == 0 {
				return true, true
			}
		}
		return false, true
	}
	if c, ok := sign("const"); ok && c != 0 {
		return false
	}
	if has, ok := listHasZero("in"); ok && !has {
		return false
	}
	if has, ok := listHasZero("not_in"); ok && has {
		return false
	}
	lowOK, hasLow := true, false
	if g, ok := sign("gt"); ok {
		lowOK, hasLow = g < 0, true
	} else if g, ok := sign("gte"); ok {
		lowOK, hasLow = g <= 0, true
	}
	highOK, hasHigh := true, false
	if l, ok := sign("lt"); ok {
		highOK, hasHigh = l > 0, true
	} else if l, ok := sign("lte"); ok {
		highOK, hasHigh = l >= 0, true
	}
	if hasLow && hasHigh {
		var low, high any
		lowInclusive, highInclusive := false, false
		if fd := m.Descriptor().Fields().ByName("gt"); m.Has(fd) {
			low = jsonNumber(m.Get(fd).Interface())
		} else {
			low, lowInclusive = jsonNumber(m.Get(m.Descriptor().Fields().ByName("gte")).Interface()), true
		}
		if fd := m.Descriptor().Fields().ByName("lt"); m.Has(fd) {
			high = jsonNumber(m.Get(fd).Interface())
		} else {
			high, highInclusive = jsonNumber(m.Get(m.Descriptor().Fields().ByName("lte")).Interface()), true
		}
		if !below(low, high, lowInclusive && highInclusive) {
			return lowOK || highOK
		}
	}
	return lowOK && highOK
}

// signOf returns the sign of a widened number.
func signOf(v any) int {
	switch v := v.(type) {
	case int64:
		return compare(v, 0)
	case uint64:
		return compare(v, 0)
	case float64:
		return compare(v, 0)
	}
	return 0
}

// ruleName names the rule type set in r, for error messages.
func ruleName(r *validate.FieldRules) string {
	if fd := r.ProtoReflect().WhichOneof(r.ProtoReflect().Descriptor().Oneofs().ByName("type")); fd != nil {
		return string(fd.Name())
	}
	return "no"
}

// kindName names fd's type, for error messages.
func kindName(fd protoreflect.FieldDescriptor) string {
	if fd.Message() != nil {
		return string(fd.Message().FullName())
	}
	return fd.Kind().String()
}
