package gateway

import (
	"bytes"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// stableJSON is runtime.JSONPb whose compact output is the same from one
// build to the next. protojson adds a space after every comma in some
// builds and in none in others (on purpose, so that nobody depends on its
// bytes; the choice is fixed per binary), so REST answers changed their
// spacing between releases. In a build that adds them, Marshal takes them
// out; in one that does not, it costs nothing (BenchmarkCompact).
type stableJSON struct{ runtime.JSONPb }

// Marshal implements runtime.Marshaler.
func (m *stableJSON) Marshal(v any) ([]byte, error) {
	b, err := m.JSONPb.Marshal(v)
	if err != nil || !commaSpaces {
		return b, err
	}
	return dropCommaSpaces(b), nil
}

// marshalJSON is jsonOut.Marshal, made stable like stableJSON's.
func marshalJSON(m proto.Message) ([]byte, error) {
	b, err := jsonOut.Marshal(m)
	if err != nil || !commaSpaces {
		return b, err
	}
	return dropCommaSpaces(b), nil
}

// commaSpaces is whether this binary's protojson writes ", " between
// elements of its compact output.
var commaSpaces = func() bool {
	b, _ := protojson.Marshal(&structpb.ListValue{Values: []*structpb.Value{structpb.NewBoolValue(true), structpb.NewBoolValue(false)}})
	return bytes.Contains(b, []byte(", "))
}()

// dropCommaSpaces removes the one space protojson writes after each comma
// outside strings, in place. A string's own ", " is kept.
func dropCommaSpaces(b []byte) []byte {
	out := b[:0]
	inString, escaped, afterComma := false, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case afterComma && c == ' ':
			afterComma = false
			continue
		case c == '"':
			inString = true
		}
		afterComma = !inString && c == ','
		out = append(out, c)
	}
	return out
}
