// Package jsonrpc is toolsvc's one strict reader of JSON-RPC 2.0 messages,
// for both directions: the MCP bridge reads its clients' requests with it
// (Request) and toolsvc's MCP client of an upstream server reads that
// server's answers with it (Answer). Both boundaries are untrusted
// (docs/MCP.md, the strict reader).
//
// encoding/json matches object keys to struct fields case-insensitively,
// with Unicode folding ("ſ" is "s", "K" is "k"), lets the last of
// duplicated keys win and repairs bytes that are not UTF-8. A proxy or
// gateway that reads the same bytes with a stricter (or just different)
// JSON library would then see another method or another tool than toolsvc
// runs: the differential of CVE-2026-27896 and GHSA-q382-vc8q-7jhj in the
// official Go SDK. Every message is therefore read here first, on
// jsontext (github.com/go-json-experiment/json), which checks the grammar
// and refuses, anywhere in the message, a name that occurs twice in one
// object (compared after unescaping) and bytes that are not UTF-8 (lone
// surrogate escapes included). On top of it, keys.go adds toolsvc's own
// rule for the objects toolsvc interprets: no case or folding variant of a
// key the protocol names, no control or format character in a key.
//
// Once a message has passed, encoding/json sees each key it decodes
// spelled exactly once, so its leniency no longer matters.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// Message is any JSON-RPC message: a request (method and id), a
// notification (method, no id) or a response (result or error). The raw
// members alias the bytes read.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// IsNotification reports whether m expects no response.
func (m *Message) IsNotification() bool { return len(m.ID) == 0 && m.Method != "" }

// IsResponse reports whether m answers a request.
func (m *Message) IsResponse() bool {
	return m.Method == "" && (len(m.Result) > 0 || len(m.Error) > 0)
}

// SyntaxError is a message that is not JSON.
type SyntaxError struct{ Msg string }

func (e *SyntaxError) Error() string { return "parse error: " + e.Msg }

// KeyError is a message refused for one of its keys (or for what it is):
// the reason, and the key quoted so that a NUL or a folding character is
// visible (at most 64 bytes of it).
type KeyError struct {
	Reason string
	Key    []byte
}

func (e *KeyError) Error() string {
	if e.Key == nil {
		return "invalid request: " + e.Reason
	}
	k := e.Key
	if len(k) > 64 {
		k = k[:64]
	}
	return "invalid request: " + e.Reason + " " + strconv.QuoteToASCII(string(k))
}

var (
	// ErrNotObject is a well-formed JSON text that is not an object.
	ErrNotObject = &KeyError{Reason: "not a JSON-RPC message:", Key: []byte("not an object")}
	// ErrNotUTF8 is a message with bytes that are not UTF-8 (or an escape
	// that is no Unicode character): encoding/json would turn them into
	// U+FFFD silently.
	ErrNotUTF8 = &KeyError{Reason: "the message is not UTF-8"}
	// ErrEnvelope is an object whose jsonrpc or method is not a string.
	ErrEnvelope = &KeyError{Reason: "not a JSON-RPC 2.0 message (jsonrpc, id, method, params have the wrong types)"}
)

// ArgumentsError is a tools/call request refused for bytes that are not
// UTF-8 (or a lone surrogate escape) inside its arguments: the envelope is
// sound and the caller fixes the argument at Pointer, so a server answers
// it as invalid params, as it answers any other bad argument.
type ArgumentsError struct {
	// Pointer is the JSON pointer of the argument, relative to the
	// arguments ("" for a key of the arguments object itself).
	Pointer string
}

func (e *ArgumentsError) Error() string {
	if e.Pointer == "" {
		return "invalid params: an argument's name is not UTF-8"
	}
	return "invalid params: argument " + strconv.Quote(e.Pointer) + " is not UTF-8"
}

// errInvalidUTF8 is jsontext's own error for bytes that are not UTF-8
// (its package is internal, so it is taken from an example).
var errInvalidUTF8 = func() error {
	_, err := jsontext.AppendUnquote(nil, "\"\xff\"")
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		panic("jsontext accepts bytes that are not UTF-8")
	}
	return se.Err
}()

// reader is one reading of a message: a jsontext.Decoder straight over
// the bytes (a bytes.Buffer is read without a copy, so every value it
// returns aliases them), reused through a free list.
type reader struct {
	buf   bytes.Buffer
	dec   jsontext.Decoder
	data  []byte
	rules *Rules
	// name holds the unescaped form of a name that had escapes.
	name []byte
}

// readers are the idle readers. A bounded free list rather than a
// sync.Pool: the race detector, with which the tests run, drops a pool's
// items at random, and the allocation guards of the bridge's hot path
// (TestModernCallAllocations) must hold there too.
var readers = make(chan *reader, 64)

// lenient is for bytes a strict reading has accepted already.
var lenient = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

func getReader(data []byte, rules *Rules, opts ...jsontext.Options) *reader {
	var r *reader
	select {
	case r = <-readers:
	default:
		r = new(reader)
	}
	r.buf = *bytes.NewBuffer(data)
	r.dec.Reset(&r.buf, opts...)
	r.data, r.rules = data, rules
	return r
}

func putReader(r *reader) {
	r.buf = bytes.Buffer{}
	r.dec.Reset(&r.buf)
	r.data, r.rules = nil, nil
	select {
	case readers <- r:
	default:
	}
}

// fail words an error of jsontext as a *SyntaxError or a *KeyError.
func fail(err error) error {
	var ke *KeyError
	var se *jsontext.SyntacticError
	switch {
	case errors.As(err, &ke):
		return err
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &SyntaxError{"unexpected end of JSON input"}
	case errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName):
		return &KeyError{Reason: "duplicate key", Key: []byte(se.JSONPointer.LastToken())}
	case se != nil && (errors.Is(se.Err, errInvalidUTF8) || strings.Contains(se.Err.Error(), "surrogate")):
		// Bytes that are not UTF-8, or an escaped surrogate that is not
		// half of a pair (jsontext's InvalidTextError, internal too).
		if ptr := string(se.JSONPointer); ptr == "/params/arguments" || strings.HasPrefix(ptr, "/params/arguments/") {
			return &ArgumentsError{Pointer: strings.TrimPrefix(ptr, "/params/arguments")}
		}
		return ErrNotUTF8
	}
	return &SyntaxError{strings.TrimPrefix(err.Error(), "jsontext: ")}
}

// end checks that nothing but white space follows the value read.
func (r *reader) end() error {
	off := int(r.dec.InputOffset())
	for i := off; i < len(r.data); i++ {
		switch r.data[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return &SyntaxError{"data after the JSON value at offset " + strconv.Itoa(i)}
		}
	}
	return nil
}

// readName reads an object's member name (jsontext refuses a duplicate)
// and returns it unescaped, valid until the next name; check holds it to
// the rules and tells what the rules say of it.
func (r *reader) readName(check bool) ([]byte, keyInfo, error) {
	v, err := r.dec.ReadValue()
	if err != nil {
		return nil, 0, err
	}
	key := []byte(v[1 : len(v)-1])
	if bytes.IndexByte(key, '\\') >= 0 {
		if r.name, err = jsontext.AppendUnquote(r.name[:0], v); err != nil {
			return nil, 0, err
		}
		key = r.name
	}
	var info keyInfo
	if check {
		if info, err = r.rules.checkKey(key); err != nil {
			var ke *KeyError
			if errors.As(err, &ke) {
				ke.Key = bytes.Clone(key)
			}
			return nil, 0, err
		}
	}
	return key, info, nil
}

// value reads one value of an interpreted object: its objects' keys are
// held to the rules, but for the opaque members'.
func (r *reader) value() error {
	switch r.dec.PeekKind() {
	case '{':
		if _, err := r.dec.ReadToken(); err != nil {
			return err
		}
		for r.dec.PeekKind() != '}' {
			_, info, err := r.readName(true)
			if err != nil {
				return err
			}
			if info&opaque != 0 {
				_, err = r.dec.ReadValue()
			} else {
				err = r.value()
			}
			if err != nil {
				return err
			}
		}
		_, err := r.dec.ReadToken()
		return err
	case '[':
		if _, err := r.dec.ReadToken(); err != nil {
			return err
		}
		for r.dec.PeekKind() != ']' {
			if err := r.value(); err != nil {
				return err
			}
		}
		_, err := r.dec.ReadToken()
		return err
	}
	_, err := r.dec.ReadValue()
	return err
}

// valueStart is the offset of the value after the name just read: past
// the white space and the colon.
func (r *reader) valueStart() int {
	i := int(r.dec.InputOffset())
	for i < len(r.data) {
		switch r.data[i] {
		case ' ', '\t', '\r', '\n', ':':
			i++
			continue
		}
		break
	}
	return i
}

// Read checks one JSON-RPC message (a JSON object) strictly under rules
// and returns it. The error is a *SyntaxError (not JSON) or a *KeyError
// (a key refused, bytes that are not UTF-8, not an object, or an envelope
// of the wrong types). Reading stops at the first fault, so a key can be
// blamed in a message that is not JSON further on.
func Read(data []byte, rules *Rules) (Message, error) {
	r := getReader(data, rules)
	defer putReader(r)
	var m Message
	if r.dec.PeekKind() != '{' {
		if _, err := r.dec.ReadValue(); err != nil {
			return m, fail(err)
		}
		if err := r.end(); err != nil {
			return m, err
		}
		return m, ErrNotObject
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return m, fail(err)
	}
	var jsonrpcV, methodV []byte
	for r.dec.PeekKind() != '}' {
		key, info, err := r.readName(true)
		if err != nil {
			return m, fail(err)
		}
		var slot *[]byte
		switch string(key) {
		case "jsonrpc":
			slot = &jsonrpcV
		case "id":
			slot = (*[]byte)(&m.ID)
		case "method":
			slot = &methodV
		case "params":
			slot = (*[]byte)(&m.Params)
		case "result":
			slot = (*[]byte)(&m.Result)
		case "error":
			slot = (*[]byte)(&m.Error)
		}
		start := r.valueStart()
		if info&envelopeOpaque != 0 {
			_, err = r.dec.ReadValue()
		} else {
			err = r.value()
		}
		if err != nil {
			return m, fail(err)
		}
		if slot != nil {
			*slot = data[start:r.dec.InputOffset():r.dec.InputOffset()]
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return m, fail(err)
	}
	if err := r.end(); err != nil {
		return m, err
	}
	var okV, okM bool
	m.JSONRPC, okV = StringValue(jsonrpcV)
	m.Method, okM = StringValue(methodV)
	if !okV || !okM {
		return Message{}, ErrEnvelope
	}
	return m, nil
}

// ReadBatch checks a JSON array of messages (a JSON-RPC batch) for
// duplicates and UTF-8 and returns its raw elements, each to be read with
// Read.
func ReadBatch(data []byte) ([][]byte, error) {
	r := getReader(data, nil)
	defer putReader(r)
	if r.dec.PeekKind() != '[' {
		return nil, &SyntaxError{"not a JSON array"}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, fail(err)
	}
	var elems [][]byte
	for r.dec.PeekKind() != ']' {
		v, err := r.dec.ReadValue()
		if err != nil {
			return nil, fail(err)
		}
		elems = append(elems, v)
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, fail(err)
	}
	return elems, r.end()
}
