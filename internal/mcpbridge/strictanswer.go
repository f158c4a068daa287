package mcpbridge

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// The same strict reader for the other direction: toolsvc's MCP client of
// an upstream server (internal/tools/upstream) reads every answer with
// ScanAnswer before encoding/json sees it, so that an upstream can no more
// smuggle a second spelling of a key past toolsvc than a client can past
// the bridge (seed 001: an upstream is an untrusted boundary).

// answerKeys are the keys toolsvc's client reads in a server's answers
// (initialize, tools/list, tools/call, errors) besides protocolKeys.
var answerKeys = append(append([]string(nil), protocolKeys...),
	"serverInfo", "tools", "nextCursor", "description", "inputSchema", "outputSchema",
	"annotations", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint",
	"content", "structuredContent", "isError", "code", "message", "data", "text",
)

// answerOpaque are the members of an answer whose content toolsvc does not
// interpret key by key: schemas (compiled by a JSON Schema library, their
// property names are the tool's), structured content (checked against the
// tool's outputSchema) and content blocks (passed on). Duplicates are
// still refused inside them.
var answerOpaque = map[string]bool{
	"inputSchema": true, "outputSchema": true, "structuredContent": true, "content": true,
	"arguments": true, "data": true, "capabilities": true,
}

var answerExact, answerFolded = func() (map[string]bool, map[string]string) {
	exact := make(map[string]bool, len(answerKeys))
	folded := make(map[string]string, len(answerKeys))
	for _, k := range answerKeys {
		exact[k] = true
		folded[string(foldKey(nil, []byte(k)))] = k
	}
	return exact, folded
}()

// checkAnswerKey is checkKey with the client's keys.
func checkAnswerKey(key []byte) error {
	if answerExact[string(key)] {
		return nil
	}
	if err := checkKey(key); err != nil {
		return err // a control, format or non-UTF-8 character, or a variant of a request key
	}
	var buf [64]byte
	if want, ok := answerFolded[string(foldKey(buf[:0], key))]; ok {
		return &keyError{reason: "key not spelled exactly " + strconv.Quote(want) + ":", key: key}
	}
	return nil
}

// ErrAnswerNotUTF8 is ScanAnswer's error for an answer with bytes that are
// not UTF-8 (encoding/json would turn them into U+FFFD silently).
var ErrAnswerNotUTF8 = errors.New("the message is not UTF-8")

// ScanAnswer checks one JSON-RPC message an upstream MCP server sent
// toolsvc as strictly as the bridge reads its clients' requests: the whole
// message must be UTF-8; no object anywhere may repeat a key; and in every
// object toolsvc interprets (the envelope, result, error, each listed
// tool, its annotations and _meta) a key must not be a case or Unicode
// variant of one toolsvc reads, nor hold a control or format character.
// The error says which key and why.
func ScanAnswer(data []byte) error {
	if !utf8.Valid(data) {
		return ErrAnswerNotUTF8
	}
	s := scanner{data: data, answer: true}
	s.ws()
	if s.pos >= len(s.data) || s.data[s.pos] != '{' {
		return errNotObject
	}
	if err := s.object(0, scopeProtocol, nil); err != nil {
		return err
	}
	return s.end()
}
