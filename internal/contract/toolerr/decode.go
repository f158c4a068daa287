package toolerr

import (
	"regexp"
	"strings"
)

// positionPrefix is protojson's position of an error in its input.
var positionPrefix = regexp.MustCompile(`^\(line \d+:\d+\):\s*`)

// DecodeReason is the reason of a protojson decoding error without its
// Go internals: the "proto:" prefix (protojson separates it with a space
// or a no-break space, by design unstable) and the "(line 1:12): "
// position, which names a place in JSON the caller never wrote when the
// arguments were re-encoded. What remains names the field and the problem,
// such as `unknown field "foo"`. Text without the prefix is kept as it is.
func DecodeReason(msg string) string {
	if i := strings.Index(msg, "proto:"); i >= 0 {
		msg = strings.TrimSpace(msg[i+len("proto:"):])
	}
	return positionPrefix.ReplaceAllString(msg, "")
}
