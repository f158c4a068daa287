package backend

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

// Position is a place in the audit log's newest-first order: the last event
// of a page. The next page starts strictly after it.
type Position struct {
	// AtMicros is the event's time in microseconds since the Unix epoch.
	AtMicros int64
	// ID breaks ties between events of the same microsecond.
	ID int64
}

// IsZero reports whether p is the start of the log.
func (p Position) IsZero() bool { return p == Position{} }

const cursorVersion = "a1"

// EncodeCursor returns the opaque cursor for the page after p. It ends in a
// checksum over p and the filter fields, so a cursor that was altered or is
// replayed against another filter (or tenant) is rejected rather than
// silently paging from a wrong place. The checksum is not a secret: a
// forged cursor can only ever page through the caller's own filter.
func EncodeCursor(f store.AuditFilter, p Position) string {
	body := cursorVersion + "." + strconv.FormatInt(p.AtMicros, 10) + "." + strconv.FormatInt(p.ID, 10)
	return base64.RawURLEncoding.EncodeToString([]byte(body + "." + checksum(f, body)))
}

// DecodeCursor parses a cursor issued by EncodeCursor for the same filter.
// Any defect is store.ErrInvalidCursor.
func DecodeCursor(f store.AuditFilter, cursor string) (Position, error) {
	bad := func(reason string) (Position, error) {
		return Position{}, fmt.Errorf("%w: %s", store.ErrInvalidCursor, reason)
	}
	if len(cursor) > 256 {
		return bad("too long")
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return bad("not base64url")
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 4 || parts[0] != cursorVersion {
		return bad("unknown format")
	}
	at, err1 := strconv.ParseInt(parts[1], 10, 64)
	id, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || id <= 0 {
		return bad("unknown format")
	}
	if parts[3] != checksum(f, strings.Join(parts[:3], ".")) {
		return bad("altered or issued for a different filter")
	}
	return Position{AtMicros: at, ID: id}, nil
}

func checksum(f store.AuditFilter, body string) string {
	h := fnv.New64a()
	for _, s := range []string{body, f.Tenant, f.Tool, f.Subject, f.Decision, micros(f.Since), micros(f.Until)} {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	return strconv.FormatUint(h.Sum64(), 36)
}

func micros(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixMicro(), 10)
}
