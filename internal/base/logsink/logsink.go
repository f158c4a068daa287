// Package logsink writes log lines from one goroutine, in batches.
//
// slog's handlers write each record to their io.Writer under a mutex of
// their own. On a file or a pipe that is one write(2) per line with the
// mutex held: at 64 calls in flight, one access line per call, the
// service's goroutines queue on that mutex behind each other's system
// calls, and the calls cost more CPU than the same lines written to
// memory (BenchmarkSinkParallel; measured: docs/BENCHMARKS.md, "Design measurements"). A Writer takes the line into
// a buffer under a short lock and returns; its own goroutine writes
// whatever has gathered, as soon as it has anything (no timer, no delay
// when idle), so under load one write carries many lines and when idle a
// line is written as soon as it is logged.
//
// Nothing is dropped: when the buffer holds MaxBuffered bytes, Write
// waits for the goroutine to drain it. Order is kept. Close writes what is
// left; a process killed outright loses only the lines of the batch in
// flight, as with any buffered output.
package logsink

import (
	"io"
	"sync"
)

// MaxBuffered bounds the bytes waiting to be written; beyond it, Write
// waits rather than drop lines or grow without bound.
const MaxBuffered = 1 << 20

// Writer is an io.Writer that hands lines to a goroutine of its own,
// which writes them to the underlying writer in batches.
type Writer struct {
	w io.Writer

	mu      sync.Mutex
	space   *sync.Cond // signalled when the goroutine took the buffer
	pending []byte     // lines not yet taken by the goroutine
	spare   []byte     // the goroutine's last batch, reused
	closed  bool
	err     error // the first error of the underlying writer

	wake chan struct{} // capacity 1: there is something to write
	done chan struct{} // closed when the goroutine has ended
}

// New starts a Writer on w. Close it to write what is left.
func New(w io.Writer) *Writer {
	s := &Writer{w: w, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.space = sync.NewCond(&s.mu)
	go s.run()
	return s
}

// Write buffers a copy of p for the goroutine. It returns the underlying
// writer's first error, if one occurred; after Close it writes p itself.
func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	for len(s.pending) > 0 && len(s.pending)+len(p) > MaxBuffered && !s.closed {
		s.space.Wait()
	}
	if s.closed {
		s.mu.Unlock()
		<-s.done // after the last batch, not beside it
		return s.w.Write(p)
	}
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return 0, err
	}
	s.pending = append(s.pending, p...)
	select { // under the lock, so that Close cannot close wake in between
	case s.wake <- struct{}{}:
	default: // already woken; it will find this line too
	}
	s.mu.Unlock()
	return len(p), nil
}

// run writes batches until Close.
func (s *Writer) run() {
	defer close(s.done)
	for {
		_, open := <-s.wake
		s.mu.Lock()
		batch := s.pending
		s.pending = s.spare[:0]
		s.space.Broadcast()
		s.mu.Unlock()
		if len(batch) > 0 {
			if _, err := s.w.Write(batch); err != nil {
				s.mu.Lock()
				if s.err == nil {
					s.err = err
				}
				s.mu.Unlock()
			}
		}
		s.mu.Lock()
		if cap(batch) <= MaxBuffered { // a batch that grew past the bound is not kept
			s.spare = batch[:0]
		}
		s.mu.Unlock()
		if !open {
			return
		}
	}
}

// Close writes the lines still buffered, stops the goroutine and returns
// the underlying writer's first error. Later writes go straight to the
// underlying writer. Close is safe to call more than once.
func (s *Writer) Close() error {
	s.mu.Lock()
	if s.closed {
		err := s.err
		s.mu.Unlock()
		return err
	}
	s.closed = true
	close(s.wake)
	s.space.Broadcast()
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
