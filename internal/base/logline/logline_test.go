package logline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/logline"
)

// both encodes r with the fast handler and with slog's.
func both(t testing.TB, r slog.Record, opts *slog.HandlerOptions) (fast, want string) {
	t.Helper()
	var a, b bytes.Buffer
	if err := logline.NewJSONHandler(&a, opts).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := slog.NewJSONHandler(&b, opts).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String()
}

func record(level slog.Level, msg string, as ...slog.Attr) slog.Record {
	r := slog.NewRecord(time.Date(2026, 11, 28, 21, 39, 5, 723176772, time.UTC), level, msg, 0)
	r.AddAttrs(as...)
	return r
}

// TestSameAsSlog: every line, the fast path's and the general path's,
// is byte for byte slog's.
func TestSameAsSlog(t *testing.T) {
	access := []slog.Attr{
		slog.String("tool", "get-sync-status"), slog.String("version", "1.0.0"), slog.String("transport", "grpc"),
		slog.String("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), slog.String("correlation_id", "3f1c9a4e-2b7d-4c1e-9f0a-1b2c3d4e5f60"),
		slog.String("code", "OK"), slog.Float64("duration_ms", 0.412), slog.Bool("cached", false),
		slog.String("principal", "svc-1"), slog.String("tenant", "acme"),
	}
	cases := map[string]slog.Record{
		"access line":     record(slog.LevelInfo, "call finished", access...),
		"no attributes":   record(slog.LevelWarn, "draining"),
		"zero time":       slog.NewRecord(time.Time{}, slog.LevelError, "x", 0),
		"other zone":      slog.NewRecord(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", -7*3600)), slog.LevelInfo, "x", 0),
		"level above":     record(slog.LevelInfo+2, "odd level"),
		"escapes":         record(slog.LevelInfo, "a\"b\\c\nd\re\tf\x00g\x1fh\x7fi<j>&k", slog.String("k\"ey\n", "\u2028\u2029é€😀\xff\xfe end")),
		"numbers":         record(slog.LevelInfo, "n", slog.Int64("i", math.MinInt64), slog.Uint64("u", math.MaxUint64), slog.Int("z", 0)),
		"floats":          record(slog.LevelInfo, "f", slog.Float64("a", 1e21), slog.Float64("b", 1e-7), slog.Float64("c", 123456789.125), slog.Float64("d", math.Copysign(0, -1)), slog.Float64("e", 5e-324), slog.Float64("f", math.MaxFloat64), slog.Float64("g", 0.000001)),
		"durations":       record(slog.LevelInfo, "d", slog.Duration("d", 1500*time.Millisecond), slog.Duration("n", -time.Nanosecond)),
		"general: group":  record(slog.LevelInfo, "g", slog.Group("g", slog.String("a", "b"))),
		"general: any":    record(slog.LevelInfo, "a", slog.Any("m", map[string]int{"x": 1}), slog.Any("err", errors.New("boom"))),
		"general: NaN":    record(slog.LevelInfo, "nan", slog.Float64("x", math.NaN())),
		"general: no key": record(slog.LevelInfo, "k", slog.String("", "v"), slog.Int("", 0)),
		"general: time":   record(slog.LevelInfo, "t", slog.Time("at", time.Unix(0, 0).UTC())),
		"general: year":   slog.NewRecord(time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, "y", 0),
	}
	for name, r := range cases {
		fast, want := both(t, r, nil)
		if fast != want {
			t.Errorf("%s:\n got %s\nwant %s", name, fast, want)
		}
	}
}

// TestSameAsSlogRandom compares random lines of the fast path's kinds.
func TestSameAsSlogRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "\n", "\x01", "\x7f", "é", "\u2028", "😀", "\xff", "<", "&", "\t", "\r"}
	str := func() string {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for i := range 2000 {
		var as []slog.Attr
		for range rng.IntN(8) {
			key := "k" + str()
			switch rng.IntN(6) {
			case 0:
				as = append(as, slog.String(key, str()))
			case 1:
				as = append(as, slog.Int64(key, rng.Int64()-rng.Int64()))
			case 2:
				as = append(as, slog.Uint64(key, rng.Uint64()))
			case 3:
				as = append(as, slog.Float64(key, math.Float64frombits(rng.Uint64())))
			case 4:
				as = append(as, slog.Bool(key, rng.IntN(2) == 0))
			case 5:
				as = append(as, slog.Duration(key, time.Duration(rng.Int64())))
			}
		}
		r := slog.NewRecord(time.Unix(rng.Int64N(1<<34), rng.Int64N(1e9)), slog.Level(rng.IntN(20)-8), str(), 0)
		r.AddAttrs(as...)
		if fast, want := both(t, r, nil); fast != want {
			t.Fatalf("line %d:\n got %s\nwant %s", i, fast, want)
		}
	}
}

// FuzzSameAsSlog compares lines of a fuzzed message, key and values.
func FuzzSameAsSlog(f *testing.F) {
	f.Add("call finished", "tool", "get-sync-status", int64(7), 0.412, true)
	f.Add("\xff\u2028", "\"", "\x00\\", int64(-1), 1e-9, false)
	f.Fuzz(func(t *testing.T, msg, key, s string, i int64, x float64, ok bool) {
		if key == "" {
			key = "k"
		}
		r := record(slog.LevelInfo, msg, slog.String(key, s), slog.Int64("i", i), slog.Float64("x", x), slog.Bool("ok", ok))
		if fast, want := both(t, r, nil); fast != want {
			t.Fatalf("\n got %s\nwant %s", fast, want)
		}
	})
}

func TestLevelsAndDerivedLoggers(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(logline.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	log.Info("dropped")
	log.Warn("kept", slog.Int("n", 1))
	log.With(slog.String("replica", "r1")).WithGroup("g").Error("derived", slog.Int("n", 2))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if second["replica"] != "r1" || second["g"].(map[string]any)["n"] != 2.0 || !strings.Contains(lines[0], `"msg":"kept","n":1}`) {
		t.Errorf("lines %q", lines)
	}
	// With ReplaceAttr, the handler is slog's own, and the option works.
	buf.Reset()
	h := logline.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	slog.New(h).Info("no time")
	if buf.String() != `{"level":"INFO","msg":"no time"}`+"\n" {
		t.Errorf("ReplaceAttr: %q", buf.String())
	}
}

// TestLinesDoNotInterleave writes from many goroutines through both paths
// to one unsynchronized writer: every line is whole JSON.
func TestLinesDoNotInterleave(t *testing.T) {
	var buf bytes.Buffer // not safe for concurrent use: the handler's lock is
	log := slog.New(logline.NewJSONHandler(&buf, nil))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if i%2 == 0 {
					log.Info("fast", slog.Int("g", g), slog.String("pad", strings.Repeat("x", 300)))
				} else {
					log.Info("general", slog.Any("m", map[string]int{"g": g}))
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1600 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("broken line %q", l)
		}
	}
}

func BenchmarkAccessLine(b *testing.B) {
	r := record(slog.LevelInfo, "call finished",
		slog.String("tool", "get-sync-status"), slog.String("version", "1.0.0"), slog.String("transport", "grpc"),
		slog.String("trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"), slog.String("correlation_id", "3f1c9a4e-2b7d-4c1e-9f0a-1b2c3d4e5f60"),
		slog.String("code", "OK"), slog.Float64("duration_ms", 0.412), slog.Bool("cached", false),
		slog.String("principal", "svc-1"), slog.String("tenant", "acme"))
	for name, h := range map[string]slog.Handler{"logline": logline.NewJSONHandler(discard{}, nil), "slog": slog.NewJSONHandler(discard{}, nil)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = h.Handle(context.Background(), r)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
