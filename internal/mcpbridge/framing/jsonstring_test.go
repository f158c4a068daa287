package framing

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// encodingJSON is encoding/json's string, without HTML escaping; it also
// escapes U+2028 and U+2029, which the bridge's writer leaves alone.
func encodingJSON(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	out := strings.TrimSuffix(buf.String(), "\n")
	return strings.NewReplacer(`\u2028`, "\u2028", `\u2029`, "\u2029").Replace(out)
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\s`, "\b\f\n\r\t\x00\x1f\x7f", "héllo ☃ 𝄞", "bad \xff\xfe utf8", "\xe2\x82", "<&>", "\u2028\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fromString := string(AppendJSONString(nil, s))
		if fromBytes := string(AppendJSONString(nil, []byte(s))); fromBytes != fromString {
			t.Fatalf("string and []byte disagree: %s vs %s", fromString, fromBytes)
		}
		if want := encodingJSON(s); fromString != want {
			t.Fatalf("AppendJSONString(%q) = %s, encoding/json writes %s", s, fromString, want)
		}
		var back string
		if err := json.Unmarshal([]byte(fromString), &back); err != nil {
			t.Fatalf("not JSON: %s: %v", fromString, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip: %q became %q", s, back)
		}
	})
}
