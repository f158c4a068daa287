package jsonrpc

import (
	"strconv"
	"unicode"
	"unicode/utf8"
)

// toolsvc's own rule on keys, which no JSON library has (docs/MCP.md,
// the strict reader): in every object toolsvc interprets, a key that is
// not exactly one the protocol names but folds to one ("Name", "METHOD",
// "paramſ", the Kelvin sign) is refused, and so is a key with a control or
// format character (a NUL suffix, a zero-width space). encoding/json,
// which later decodes the accepted message, matches keys case-insensitively
// with Unicode folding: after this rule it sees each key it decodes
// spelled exactly once.

// RequestKeys are the keys the bridge reads anywhere in a client's
// message, in both eras.
var RequestKeys = []string{
	// The JSON-RPC envelope.
	"jsonrpc", "id", "method", "params", "result", "error",
	// Params of the methods the bridge serves.
	"name", "arguments", "_meta", "progressToken", "cursor", "uri", "protocolVersion",
	"clientInfo", "capabilities", "version", "level", "requestId", "reason", "ref",
	"argument", "value", "context", "type", "title", "task", "taskId", "ttl", "ttlMs",
	// 2026-07-28 _meta keys.
	"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo",
	"io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/logLevel",
	"traceparent", "tracestate", "baggage",
}

// AnswerKeys are the keys toolsvc's upstream client reads in a server's
// answers (initialize, tools/list, tools/call, errors) besides RequestKeys.
var AnswerKeys = append(append([]string(nil), RequestKeys...),
	"serverInfo", "tools", "nextCursor", "description", "inputSchema", "outputSchema",
	"annotations", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint",
	"content", "structuredContent", "isError", "code", "message", "data", "text",
	// What a server asks the client during a call (opaque, below).
	"requestedSchema", "metadata", "inputRequests",
)

// Rules say which objects of a message are interpreted (their keys are
// held to the rule above) and which are opaque (data passed on or read by
// another exact reader: only duplicates are refused there, as everywhere).
type Rules struct {
	// keys tells, in one look-up, what a key is: one the rules name
	// (exact), and whether its value is opaque in an interpreted object
	// or in the envelope.
	keys   map[string]keyInfo
	folded map[string]string
}

type keyInfo uint8

const (
	exact keyInfo = 1 << iota
	// opaque: the value of this member of an interpreted object is opaque.
	opaque
	// envelopeOpaque: the value of this member of the envelope is opaque.
	envelopeOpaque
)

func newRules(keys, opaqueKeys, envelopeOpaqueKeys []string) *Rules {
	r := &Rules{keys: map[string]keyInfo{}, folded: map[string]string{}}
	for _, k := range keys {
		r.keys[k] |= exact
		r.folded[string(foldKey(nil, []byte(k)))] = k
	}
	for _, k := range opaqueKeys {
		r.keys[k] |= opaque | envelopeOpaque
	}
	for _, k := range envelopeOpaqueKeys {
		r.keys[k] |= envelopeOpaque
	}
	return r
}

// Request is how the bridge reads a client's message: tool arguments are
// opaque (protojson reads them with exact names), and so is a client's
// answer (result, error), which the bridge reads none of.
var Request = newRules(RequestKeys, []string{"arguments"}, []string{"result", "error"})

// Answer is how toolsvc's upstream client reads a server's message: the
// envelope, result, error, each listed tool, its annotations and _meta are
// interpreted; schemas (compiled by a JSON Schema library, their property
// names are the tool's), structured content (checked against the tool's
// outputSchema), content blocks (passed on), arguments, error data and
// capabilities are opaque; so are what a server asks of the client during
// a call (an elicitation's requestedSchema, a sampling request's
// metadata, a 2026 result's inputRequests), which toolsvc relays unchanged
// and reads only with exact members.
var Answer = newRules(AnswerKeys, []string{
	"inputSchema", "outputSchema", "structuredContent", "content", "arguments", "data", "capabilities",
	"requestedSchema", "metadata", "inputRequests",
}, nil)

// IsExact reports whether key is one the rules name.
func (r *Rules) IsExact(key string) bool { return r.keys[key]&exact != 0 }

// checkKey refuses a key of an interpreted object that is not spelled
// exactly as the protocol names it.
func (r *Rules) checkKey(key []byte) (keyInfo, error) {
	if info := r.keys[string(key)]; info&exact != 0 {
		return info, nil
	}
	for i := 0; i < len(key); {
		c := key[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return 0, &KeyError{Reason: "key with a control character", Key: key}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(key[i:])
		if r == utf8.RuneError {
			// Not reached (jsontext refuses what is not UTF-8); the rule
			// stands on its own all the same.
			return 0, &KeyError{Reason: "key that is not UTF-8", Key: key}
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return 0, &KeyError{Reason: "key with a control or format character", Key: key}
		}
		i += n
	}
	var buf [64]byte
	if want, ok := r.folded[string(foldKey(buf[:0], key))]; ok {
		return 0, &KeyError{Reason: "key not spelled exactly " + strconv.Quote(want) + ":", Key: key}
	}
	return 0, nil
}

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
