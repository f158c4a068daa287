package mcpbridge

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The strict reader of JSON-RPC messages.
//
// encoding/json matches object keys to struct fields case-insensitively,
// with Unicode folding ("ſ" is "s", "K" is "k"), and lets the last of
// duplicated keys win. A proxy or gateway in front of the bridge that reads
// the same bytes with a stricter (or just different) JSON library would
// then see another method or another tool than the bridge runs: the
// differential of CVE-2026-27896 and GHSA-q382-vc8q-7jhj in the official Go
// SDK. The bridge therefore reads every message with scanMessage first,
// which refuses, anywhere in the message,
//
//   - a key that occurs twice in one object (compared after unescaping);
//
// and, in every object the bridge interprets (the envelope, params, _meta,
// clientInfo, and whatever else a method reads: everything but tool
// arguments, which protojson reads with exact names and duplicate checks
// of its own),
//
//   - a key that is not exactly one the protocol names but folds to one
//     ("Name", "METHOD", "paramſ"), and
//   - a key with a control or format character (a NUL suffix, a zero-width
//     space) or with bytes that are not UTF-8.
//
// Once a message has passed, encoding/json sees each key it decodes
// spelled exactly once, so its leniency no longer matters. The scanner
// also checks the JSON grammar and extracts the envelope in the same pass,
// in place of decoding it with encoding/json.

// maxDepth bounds the nesting of a message, as encoding/json does.
const maxDepth = 10000

// protocolKeys are the keys the bridge reads anywhere in a message, in both
// eras. A key in an interpreted object that folds to one of them must be
// spelled exactly so.
var protocolKeys = []string{
	// The JSON-RPC envelope.
	"jsonrpc", "id", "method", "params", "result", "error",
	// Params of the methods the bridge serves.
	"name", "arguments", "_meta", "progressToken", "cursor", "uri", "protocolVersion",
	"clientInfo", "capabilities", "version", "level", "requestId", "reason", "ref",
	"argument", "value", "context", "type", "title", "task", "taskId", "ttl", "ttlMs",
	// 2026-07-28 _meta keys.
	metaProtocolVersion, metaClientInfo, metaClientCapabilities, metaLogLevel,
	"traceparent", "tracestate", "baggage",
}

// foldedKeys maps the folded spelling of every protocol key to the key.
var foldedKeys = func() map[string]string {
	m := make(map[string]string, len(protocolKeys))
	for _, k := range protocolKeys {
		m[string(foldKey(nil, []byte(k)))] = k
	}
	return m
}()

// exactKeys is the set of protocol keys, for the common case: an exact key.
var exactKeys = func() map[string]bool {
	m := make(map[string]bool, len(protocolKeys))
	for _, k := range protocolKeys {
		m[k] = true
	}
	return m
}()

// foldKey appends the case-folded form of key to out: every rune replaced
// by the smallest rune of its Unicode simple-folding orbit, so that every
// spelling encoding/json would match folds alike ("ſ", "s" and "S" all
// fold to "S"; "K", "k" and "K" to "K").
func foldKey(out, key []byte) []byte {
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A' // the smallest of an ASCII letter's orbit ("ſ" and "K" are larger)
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(key[i:])
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		out = utf8.AppendRune(out, low)
		i += n
	}
	return out
}

// keyError describes a refused key: the reason, and the key quoted so that
// a NUL or a folding character is visible (and at most 64 bytes of it).
type keyError struct {
	reason string
	key    []byte
}

func (e *keyError) Error() string {
	k := e.key
	if len(k) > 64 {
		k = k[:64]
	}
	return "invalid request: " + e.reason + " " + strconv.QuoteToASCII(string(k))
}

// syntaxError is a message that is not JSON.
type syntaxError struct{ msg string }

func (e *syntaxError) Error() string { return "parse error: " + e.msg }

// scope is what the scanner checks in an object's keys.
type scope uint8

const (
	// scopeProtocol is an object the bridge interprets: exact keys, no
	// duplicates.
	scopeProtocol scope = iota
	// scopeOpaque is data the bridge passes on (tool arguments, a
	// client's result): no duplicates.
	scopeOpaque
)

// scanner reads one JSON text.
type scanner struct {
	data []byte
	pos  int
	// keys are the keys of the objects being read, innermost last; each
	// object remembers where its own begin.
	keys [][]byte
	// unescaped holds the unescaped form of keys that had escapes.
	unescaped []byte
	// answer reads a server's answer for toolsvc's upstream MCP client
	// (ScanAnswer): result and error are interpreted, with answerKeys.
	answer bool
}

// envelope is what scanMessage extracts from a message: the raw values of
// the envelope's members (nil when absent).
type envelope struct {
	jsonrpc, id, method, params, result, error []byte
}

// scanMessage checks one JSON-RPC message (a JSON object) strictly and
// returns its envelope. The error is a *syntaxError (not JSON) or a
// *keyError (a key refused).
func scanMessage(data []byte) (envelope, error) {
	s := scanner{data: data}
	var env envelope
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		if err := s.value(0, scopeOpaque); err != nil {
			return env, err
		}
		if err := s.end(); err != nil {
			return env, err
		}
		return env, errNotObject
	}
	err := s.object(0, scopeProtocol, func(key []byte, start, end int) {
		v := s.data[start:end]
		switch string(key) {
		case "jsonrpc":
			env.jsonrpc = v
		case "id":
			env.id = v
		case "method":
			env.method = v
		case "params":
			env.params = v
		case "result":
			env.result = v
		case "error":
			env.error = v
		}
	})
	if err != nil {
		return env, err
	}
	return env, s.end()
}

// errNotObject is a well-formed JSON text that is not an object.
var errNotObject = &keyError{reason: "not a JSON-RPC message:", key: []byte("not an object")}

// scanBatch checks a JSON array of messages strictly and returns the raw
// elements.
func scanBatch(data []byte) ([][]byte, error) {
	s := scanner{data: data}
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != '[' {
		return nil, &syntaxError{"not a JSON array"}
	}
	s.pos++
	var elems [][]byte
	s.ws()
	if s.peek() == ']' {
		s.pos++
		return elems, s.end()
	}
	for {
		s.ws()
		start := s.pos
		if err := s.value(1, scopeOpaque); err != nil {
			return nil, err
		}
		elems = append(elems, s.data[start:s.pos])
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return elems, s.end()
		default:
			return nil, s.unexpected()
		}
	}
}

func (s *scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// end checks that nothing but white space follows the value.
func (s *scanner) end() error {
	s.ws()
	if s.pos != len(s.data) {
		return &syntaxError{"data after the JSON value at offset " + strconv.Itoa(s.pos)}
	}
	return nil
}

func (s *scanner) unexpected() error {
	if s.pos >= len(s.data) {
		return &syntaxError{"unexpected end of JSON input"}
	}
	return &syntaxError{"invalid character " + strconv.QuoteRune(rune(s.data[s.pos])) + " at offset " + strconv.Itoa(s.pos)}
}

// value reads one JSON value at nesting depth; sc is the scope of the
// objects it holds.
func (s *scanner) value(depth int, sc scope) error {
	s.ws()
	switch s.peek() {
	case '{':
		return s.object(depth, sc, nil)
	case '[':
		return s.array(depth, sc)
	case '"':
		_, _, err := s.str()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return s.number()
	}
	return s.unexpected()
}

func (s *scanner) literal(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return s.unexpected()
	}
	s.pos += len(lit)
	return nil
}

// number reads a JSON number (RFC 8259 grammar).
func (s *scanner) number() error {
	if s.peek() == '-' {
		s.pos++
	}
	switch c := s.peek(); {
	case c == '0':
		s.pos++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return s.unexpected()
	}
	if s.peek() == '.' {
		s.pos++
		if c := s.peek(); c < '0' || c > '9' {
			return s.unexpected()
		}
		s.digits()
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		if c := s.peek(); c < '0' || c > '9' {
			return s.unexpected()
		}
		s.digits()
	}
	return nil
}

func (s *scanner) digits() {
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
}

// str reads a JSON string and returns its raw content (between the
// quotes) and whether it has escapes.
func (s *scanner) str() (raw []byte, escaped bool, err error) {
	s.pos++ // the opening quote
	start := s.pos
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			raw = s.data[start:s.pos]
			s.pos++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			s.pos++
			switch s.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos++
			case 'u':
				s.pos++
				for range 4 {
					if !isHex(s.peek()) {
						return nil, false, s.unexpected()
					}
					s.pos++
				}
			default:
				return nil, false, s.unexpected()
			}
		case c < 0x20:
			return nil, false, s.unexpected()
		default:
			s.pos++
		}
	}
	return nil, false, s.unexpected()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (s *scanner) array(depth int, sc scope) error {
	if depth++; depth > maxDepth {
		return &syntaxError{"exceeded max depth"}
	}
	s.pos++ // [
	s.ws()
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := s.value(depth, sc); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.unexpected()
		}
	}
}

// dupMapFrom is the number of keys from which an object's duplicate check
// uses a map rather than comparing with every earlier key.
const dupMapFrom = 32

// object reads a JSON object at nesting depth. In scopeProtocol every key
// is checked for exactness; in both scopes for duplicates. member, if not
// nil, is told of each member (the unescaped key and the bounds of the
// raw value).
func (s *scanner) object(depth int, sc scope, member func(key []byte, start, end int)) error {
	if depth++; depth > maxDepth {
		return &syntaxError{"exceeded max depth"}
	}
	s.pos++ // {
	first := len(s.keys)
	defer func() { s.keys = s.keys[:first] }()
	var seen map[string]struct{}
	s.ws()
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		s.ws()
		if s.peek() != '"' {
			return s.unexpected()
		}
		raw, escaped, err := s.str()
		if err != nil {
			return err
		}
		key := raw
		if escaped {
			key = s.unescape(raw)
		}
		if sc == scopeProtocol {
			check := checkKey
			if s.answer {
				check = checkAnswerKey
			}
			if err := check(key); err != nil {
				return err
			}
		}
		// Duplicates: compared with every earlier key, or by map in a
		// large object.
		n := len(s.keys) - first
		switch {
		case seen != nil:
			if _, dup := seen[string(key)]; dup {
				return &keyError{reason: "duplicate key", key: key}
			}
			seen[string(key)] = struct{}{}
		case n >= dupMapFrom:
			seen = make(map[string]struct{}, 2*n)
			for _, k := range s.keys[first:] {
				seen[string(k)] = struct{}{}
			}
			if _, dup := seen[string(key)]; dup {
				return &keyError{reason: "duplicate key", key: key}
			}
			seen[string(key)] = struct{}{}
		default:
			for _, k := range s.keys[first:] {
				if string(k) == string(key) {
					return &keyError{reason: "duplicate key", key: key}
				}
			}
			s.keys = append(s.keys, key)
		}
		s.ws()
		if s.peek() != ':' {
			return s.unexpected()
		}
		s.pos++
		s.ws()
		start := s.pos
		child := sc
		if sc == scopeProtocol && string(key) == "arguments" {
			child = scopeOpaque // tool arguments: protojson reads them exactly
		}
		if depth == 1 && (string(key) == "result" || string(key) == "error") && !s.answer {
			child = scopeOpaque // a client's answer: the bridge reads none of it
		}
		if s.answer && sc == scopeProtocol && answerOpaque[string(key)] {
			child = scopeOpaque
		}
		if err := s.value(depth, child); err != nil {
			return err
		}
		if member != nil {
			member(key, start, s.pos)
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.unexpected()
		}
	}
}

// checkKey refuses a key of an interpreted object that is not spelled
// exactly as the protocol names it.
func checkKey(key []byte) error {
	if exactKeys[string(key)] {
		return nil
	}
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return &keyError{reason: "key with a control character", key: key}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(key[i:])
		if r == utf8.RuneError {
			return &keyError{reason: "key that is not UTF-8", key: key}
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return &keyError{reason: "key with a control or format character", key: key}
		}
		i += n
	}
	var buf [64]byte
	if want, ok := foldedKeys[string(foldKey(buf[:0], key))]; ok {
		return &keyError{reason: "key not spelled exactly " + strconv.Quote(want) + ":", key: key}
	}
	return nil
}

// unescape returns the unescaped form of a string's raw content, valid
// until the next call. Invalid surrogates become U+FFFD, as encoding/json
// has them.
func (s *scanner) unescape(raw []byte) []byte {
	out := s.unescaped[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hexRune(raw[i+1 : i+5])
			i += 4
			if utf16.IsSurrogate(r) {
				// A pair is two escapes (str checked their hex digits);
				// anything else is U+FFFD, the next escape read on its own.
				pair := utf8.RuneError
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					pair = utf16.DecodeRune(r, hexRune(raw[i+3:i+7]))
				}
				if r = pair; pair != utf8.RuneError {
					i += 6
				}
			}
			out = utf8.AppendRune(out, r)
		default: // " \ /
			out = append(out, raw[i])
		}
		i++
	}
	// The keys of the open objects keep their own copies.
	key := append([]byte(nil), out...)
	s.unescaped = out
	return key
}

func hexRune(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// stringValue decodes a raw JSON value that must be a string or null (the
// envelope's jsonrpc and method); ok is false for any other type.
func stringValue(raw []byte) (v string, ok bool) {
	switch {
	case raw == nil, string(raw) == "null":
		return "", true
	case raw[0] != '"':
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			// Rare: escapes or non-ASCII. Bytes that are not UTF-8 are
			// refused, not repaired as encoding/json would (a reader that
			// repairs and one that refuses would disagree on the method);
			// the rest is decoded by encoding/json.
			if !utf8.Valid(inner) {
				return "", false
			}
			// A local of its own: &v of the named result would move v to
			// the heap on every call, the common path's too.
			var dec string
			err := json.Unmarshal(raw, &dec)
			return dec, err == nil
		}
	}
	if v, ok := interned(inner); ok {
		return v, true
	}
	return string(inner), true
}

// interned is the constant for the values every request carries (the
// jsonrpc version, the common methods, the revisions), so that reading
// them allocates nothing.
func interned(b []byte) (string, bool) {
	switch string(b) {
	case "2.0":
		return "2.0", true
	case "tools/call":
		return "tools/call", true
	case "tools/list":
		return "tools/list", true
	case "resources/read":
		return "resources/read", true
	case "resources/list":
		return "resources/list", true
	case Revision20260728:
		return Revision20260728, true
	case Revision20251125:
		return Revision20251125, true
	}
	return "", false
}

// members tells f of each member of obj, a JSON object the strict reader
// has accepted (a message's params, or an object within them): the
// unescaped key (valid during the call) and the raw value. It only walks
// the bytes, without checking them again or decoding them, so the modern
// era's _meta and header checks cost no encoding/json pass over the whole
// params and allocate nothing. It returns false when obj is not an object.
func members(obj []byte, f func(key, value []byte)) bool {
	s := scanner{data: obj}
	s.ws()
	if s.peek() != '{' {
		return false
	}
	s.pos++
	for {
		s.ws()
		switch s.peek() {
		case '}':
			return true
		case ',':
			s.pos++
			continue
		case '"':
		default:
			return false
		}
		raw, escaped, err := s.str()
		if err != nil {
			return false
		}
		key := raw
		if escaped {
			key = s.unescape(raw)
		}
		s.ws()
		if s.peek() != ':' {
			return false
		}
		s.pos++
		s.ws()
		start := s.pos
		s.skip()
		f(key, bytes.TrimRight(s.data[start:s.pos], " \t\r\n"))
	}
}

// skip moves past one value of JSON the strict reader has accepted,
// stopping at the ',', '}' or ']' that follows it.
func (s *scanner) skip() {
	depth := 0
	for s.pos < len(s.data) {
		switch c := s.data[s.pos]; c {
		case '"':
			_, _, _ = s.str()
		case '{', '[':
			depth++
			s.pos++
		case '}', ']':
			if depth == 0 {
				return
			}
			depth--
			s.pos++
		case ',':
			if depth == 0 {
				return
			}
			s.pos++
		default:
			s.pos++
		}
	}
}

// member is the raw value of obj's member key, nil when obj has none (or
// is not an object).
func member(obj []byte, key string) (v []byte) {
	members(obj, func(k, value []byte) {
		if string(k) == key {
			v = value
		}
	})
	return v
}

// stringEquals reports whether raw is a JSON string (isString) and whether
// its value is want, without allocating for the usual plain ASCII string.
func stringEquals(raw []byte, want string) (isString, equal bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return false, false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			v, ok := stringValue(raw)
			return ok, ok && v == want
		}
	}
	return true, string(inner) == want
}
