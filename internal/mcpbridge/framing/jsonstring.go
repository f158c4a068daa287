package framing

import "unicode/utf8"

// AppendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped (\b \f \n \r \t by name, as encoding/json and
// protojson write them, the others as \u00XX), invalid UTF-8 as \ufffd,
// nothing else. It is the one JSON string writer of the MCP transport and
// of the result rendering: the hot path of every tools/call (the text
// copy of structuredContent) and of the result writer, hence hand-written;
// generic so that neither a string nor a byte slice is copied to be
// written.
//
// The one exception is the log line (internal/base/logline.appendString):
// its lines must be byte for byte those of slog's JSON handler, which
// escapes \b and \f as \u0008 and \u000c and escapes U+2028 and U+2029,
// where this writer follows encoding/json and protojson; it also lies
// below every transport (internal/base), which may not import this package.
func AppendJSONString[S ~string | ~[]byte](b []byte, s S) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// The run of bytes written as they are, one table look-up each.
		for i < len(s) && plainJSON[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		// At most 4 bytes: converted on the stack, not allocated.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainJSON marks the bytes a JSON string holds as they are: ASCII but
// control characters, quotes and backslashes.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
