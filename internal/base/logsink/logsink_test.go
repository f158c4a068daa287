package logsink_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsvc/toolsvc/internal/base/logsink"
	"github.com/toolsvc/toolsvc/internal/tests/support/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// lockedBuffer is an underlying writer that records every batch.
type lockedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	batches int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches++
	return l.b.Write(p)
}

func TestEveryLineOnceInOrder(t *testing.T) {
	var out lockedBuffer
	s := logsink.New(&out)
	const writers, lines = 16, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				line := fmt.Appendf(nil, "w%02d %05d\n", w, i)
				if n, err := s.Write(line); err != nil || n != len(line) {
					t.Errorf("Write = %d, %v; want %d, nil", n, err, len(line))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	got := strings.Split(strings.TrimSuffix(out.b.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines written, want %d", len(got), writers*lines)
	}
	for _, l := range got {
		var w, i int
		if _, err := fmt.Sscanf(l, "w%d %d", &w, &i); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: line %d after line %d", w, i, next[w]-1)
		}
		next[w]++
	}
	if out.batches >= writers*lines {
		t.Errorf("%d writes for %d lines: nothing was batched", out.batches, writers*lines)
	}
}

// gate is an underlying writer that blocks until opened.
type gate struct {
	open    chan struct{}
	written atomic.Int64
}

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	g.written.Add(int64(len(p)))
	return len(p), nil
}

func TestWriteWaitsWhenFull(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	s := logsink.New(g)
	line := bytes.Repeat([]byte("x"), 1023)
	line = append(line, '\n')
	const total = 3 * logsink.MaxBuffered / 1024 // three buffers' worth
	var accepted atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range total {
			if _, err := s.Write(line); err != nil {
				t.Error(err)
				return
			}
			accepted.Add(1)
		}
	}()
	// With the underlying writer stuck, at most one batch is in flight and
	// one buffer waits: Write must stop accepting near two buffers' worth.
	limit := int64(2*logsink.MaxBuffered/len(line) + 1)
	var last int64 = -1
	for stable := 0; stable < 5; {
		time.Sleep(20 * time.Millisecond)
		if n := accepted.Load(); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	if last > limit || last == total {
		t.Fatalf("accepted %d lines with the writer stuck; want at most %d of %d", last, limit, total)
	}
	close(g.open)
	<-done
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := g.written.Load(), int64(total*len(line)); got != want {
		t.Fatalf("%d bytes written, want %d: lines were lost", got, want)
	}
}

type failing struct{ calls atomic.Int32 }

var errDisk = errors.New("disk full")

func (f *failing) Write(p []byte) (int, error) {
	f.calls.Add(1)
	return 0, errDisk
}

func TestUnderlyingErrorIsReported(t *testing.T) {
	f := &failing{}
	s := logsink.New(f)
	if _, err := s.Write([]byte("one\n")); err != nil {
		t.Fatalf("first Write: %v (the error cannot be known yet)", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if _, err := s.Write([]byte("two\n")); !errors.Is(err, errDisk) {
		t.Fatalf("Write after the failure = %v, want %v", err, errDisk)
	}
	if err := s.Close(); !errors.Is(err, errDisk) {
		t.Fatalf("Close = %v, want %v", err, errDisk)
	}
}

func TestWriteAfterCloseGoesThrough(t *testing.T) {
	var out lockedBuffer
	s := logsink.New(&out)
	_, _ = s.Write([]byte("before\n"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	if got := out.b.String(); got != "before\nafter\n" {
		t.Fatalf("written %q", got)
	}
}

// BenchmarkSinkParallel logs the access line of a call from 64 goroutines
// per CPU with slog's JSON handler into a file, directly and through a
// Writer; cpu-µs/op is the process's CPU per line.
func BenchmarkSinkParallel(b *testing.B) {
	for _, name := range []string{"direct", "logsink"} {
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var w io.Writer = f
			if name == "logsink" {
				s := logsink.New(f)
				defer s.Close()
				w = s
			}
			l := slog.New(slog.NewJSONHandler(w, nil))
			ctx := context.Background()
			b.SetParallelism(32)
			start := testenv.ProcessCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.LogAttrs(ctx, slog.LevelInfo, "call finished", slog.String("tool", "get-sync-status"),
						slog.String("transport", "grpc"), slog.String("trace_id", "0af7651916cd43dd8448eb211c80319c"),
						slog.String("correlation_id", "c2f1d7a94b0e4c1f"), slog.String("code", "OK"),
						slog.Float64("duration_ms", 1.234), slog.Bool("cached", false),
						slog.String("principal", "key-0042"), slog.String("tenant", "acme"))
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((testenv.ProcessCPU()-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
