// Package logline is slog's JSON handler with a fast path for the lines a
// service logs most: every line whose attributes are strings, integers,
// finite floats, booleans and durations, with no attributes or groups
// added by WithAttrs or WithGroup, is encoded here, byte for byte as
// slog.JSONHandler encodes it; every other line goes to a slog.JSONHandler
// on the same writer.
//
// slog's handler is general: each attribute is resolved, its key escaped
// and its value dispatched on its kind, floats go through encoding/json,
// and Logger.Log walks the stack for a source position. On toolsvc's
// access line (one per call, thirteen attributes) that is about 15,000
// instructions of a call's chain; this path spends a fraction of it
// (docs/BENCHMARKS.md, "Where the chain's time goes"). TestSameAsSlog and
// FuzzSameAsSlog hold the two encodings equal.
package logline

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// NewJSONHandler returns a handler writing JSON lines to w, as
// slog.NewJSONHandler(w, opts) does. With opts.ReplaceAttr or
// opts.AddSource set it is slog's own handler.
func NewJSONHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	if opts.ReplaceAttr != nil || opts.AddSource {
		return slog.NewJSONHandler(w, opts)
	}
	lw := &lockedWriter{w: w}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	return &handler{w: lw, level: level, slow: slog.NewJSONHandler(lw, opts)}
}

// lockedWriter serializes the writes of both paths, so that lines never
// interleave whatever w is.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type handler struct {
	w     *lockedWriter
	level slog.Leveler
	slow  *slog.JSONHandler
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// WithAttrs and WithGroup return slog's handler: lines of a derived logger
// take the general path.
func (h *handler) WithAttrs(as []slog.Attr) slog.Handler { return h.slow.WithAttrs(as) }
func (h *handler) WithGroup(name string) slog.Handler    { return h.slow.WithGroup(name) }

// maxPooled is the largest buffer kept for reuse.
const maxPooled = 16 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	if !fast(r) {
		return h.slow.Handle(ctx, r)
	}
	bp := buffers.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.Round(0).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendString(b, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b = append(b, ',')
		b = appendString(b, a.Key)
		b = append(b, ':')
		b = appendValue(b, a.Value)
		return true
	})
	b = append(b, "}\n"...)
	_, err := h.w.Write(b)
	if cap(b) <= maxPooled {
		*bp = b
		buffers.Put(bp)
	}
	return err
}

// fast reports whether r is a line the fast path encodes as slog would.
func fast(r slog.Record) bool {
	if !r.Time.IsZero() {
		if y := r.Time.Year(); y < 0 || y >= 10000 {
			return false // slog writes an error into the line
		}
	}
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "" {
			ok = false // slog drops some of these, writes others
			return false
		}
		switch a.Value.Kind() {
		case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool, slog.KindDuration:
		case slog.KindFloat64:
			f := a.Value.Float64()
			ok = !math.IsNaN(f) && !math.IsInf(f, 0) // encoding/json refuses them
		default:
			ok = false
		}
		return ok
	})
	return ok
}

func appendValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindFloat64:
		return appendFloat(b, v.Float64())
	}
	panic("logline: a kind fast does not admit") // unreachable: fast checked every attribute
}

// appendFloat is encoding/json's encoding of a float64, which slog uses.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hex = "0123456789abcdef"

// appendString appends s quoted as slog's JSON handler quotes it: \" \\
// \n \r \t, other control characters as \u00XX, invalid UTF-8 as \ufffd,
// U+2028 and U+2029 escaped, nothing else (no HTML escaping).
//
// It is the documented exception to the one JSON string writer
// (internal/mcpbridge/framing.AppendJSONString): a fast-path line must be
// byte for byte slog's, and slog escapes \b, \f, U+2028 and U+2029 where
// that writer follows encoding/json and protojson; and this package,
// below every transport, may not import the transport's framing.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
