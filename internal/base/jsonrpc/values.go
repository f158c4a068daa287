package jsonrpc

import (
	"bytes"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Members tells f of each member of obj, a JSON object Read has accepted
// (a message's params, or an object within them): the unescaped key
// (valid during the call) and the raw value. It decodes nothing and checks
// nothing again, so the modern era's _meta and header checks cost no
// encoding/json pass over the whole params and allocate nothing. It
// returns false when obj is not an object.
func Members(obj []byte, f func(key, value []byte)) bool {
	r := getReader(obj, nil, lenient...)
	defer putReader(r)
	if r.dec.PeekKind() != '{' {
		return false
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return false
	}
	for r.dec.PeekKind() != '}' {
		key, _, err := r.readName(false)
		if err != nil {
			return false
		}
		v, err := r.dec.ReadValue()
		if err != nil {
			return false
		}
		f(key, v)
	}
	return true
}

// Member is the raw value of obj's member key, nil when obj has none (or
// is not an object).
func Member(obj []byte, key string) (v []byte) {
	Members(obj, func(k, value []byte) {
		if string(k) == key {
			v = value
		}
	})
	return v
}

// StringValue decodes a raw JSON value that must be a string or null (the
// envelope's jsonrpc and method, a _meta member); ok is false for any
// other type, and for a string that is not UTF-8 (refused, not repaired as
// encoding/json would: a reader that repairs and one that refuses would
// disagree on the method).
func StringValue(raw []byte) (v string, ok bool) {
	switch {
	case raw == nil, string(raw) == "null":
		return "", true
	case len(raw) < 2 || raw[0] != '"':
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			if !utf8.Valid(inner) {
				return "", false
			}
			dec, err := jsontext.AppendUnquote(nil, raw)
			return string(dec), err == nil
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
	case "2026-07-28":
		return "2026-07-28", true
	case "2025-11-25":
		return "2025-11-25", true
	}
	return "", false
}

// StringEquals reports whether raw is a JSON string (isString) and whether
// its value is want, without allocating for the usual plain ASCII string.
func StringEquals(raw []byte, want string) (isString, equal bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return false, false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && !hasNonASCII(inner) {
		return true, string(inner) == want
	}
	v, ok := StringValue(raw)
	return ok, ok && v == want
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}
