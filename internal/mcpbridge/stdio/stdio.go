// Package stdio is MCP's stdio transport: newline-delimited JSON-RPC
// messages read from the client's stream, answers and notifications
// written to its other stream, one whole message per line, nothing else.
// It knows the lines and their order, not the protocol's methods or
// revisions: each message goes to the Session the server (mcpbridge) opens
// for the connection. Notifications and responses are handed on in order,
// so that a cancellation is seen at once; requests run concurrently, so
// that notifications/cancelled can end one.
package stdio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// Session is the server's side of one stdio connection.
type Session interface {
	// Answer answers one message; the response is empty for
	// notifications and responses.
	Answer(ctx context.Context, m *framing.Message) framing.Response
	// Batch answers a line that is a JSON-RPC batch, as one message (nil:
	// nothing to send).
	Batch(ctx context.Context, line []byte) []byte
	// Gone is told that the client closed its stream: what waits on the
	// client (a subscription) ends unanswered; its other requests finish.
	Gone()
	// Close is told that the connection is over, once every request has
	// been answered.
	Close()
}

// Serve serves one connection: lines of at most maxLine bytes on in,
// messages on out. open is called once, before the first line, with the
// connection's two ways of writing: write sends a message now (from any
// goroutine, one whole line at a time); queue hands a server-initiated
// message (a tool-list change) to the connection's loop, so that whoever
// sends it never waits on a client, and drops it when 16 are waiting, as
// a session's event streams do. Serve returns when in ends (after the
// running requests are answered) or ctx is done.
func Serve(ctx context.Context, in io.Reader, out io.Writer, maxLine int64, open func(write, queue func([]byte)) Session) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wmu sync.Mutex
		wg  sync.WaitGroup
	)
	writeResponse := func(r framing.Response) {
		if r.Empty() {
			return
		}
		wmu.Lock()
		defer wmu.Unlock()
		_ = r.WriteLine(out)
	}
	write := func(msg []byte) { writeResponse(framing.Raw(msg)) }
	notes := make(chan []byte, 16)
	s := open(write, func(msg []byte) {
		select {
		case notes <- msg:
		default:
		}
	})
	defer s.Close()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		readErr <- readLines(ctx, bufio.NewReaderSize(in, 64<<10), maxLine, lines, write)
	}()
	for {
		select {
		case msg := <-notes:
			write(msg)
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		case line, ok := <-lines:
			if !ok {
				s.Gone()
				wg.Wait()
				if err := <-readErr; err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				return nil
			}
			if framing.IsArray(line) {
				write(s.Batch(ctx, line))
				continue
			}
			m, re := framing.Parse(line)
			if re != nil {
				write(framing.EncodeError(framing.NullID, re))
				continue
			}
			if m.IsNotification() || m.IsResponse() {
				s.Answer(ctx, &m) // in order, so a cancellation is seen at once; nothing is answered
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				writeResponse(s.Answer(ctx, &m))
			}()
		}
	}
}

// readLines sends the non-empty lines of r to lines until EOF; an
// over-long line is answered with an error and skipped.
func readLines(ctx context.Context, r *bufio.Reader, max int64, lines chan<- []byte, write func([]byte)) error {
	defer close(lines)
	for {
		line, err := readLine(r, max)
		if errors.Is(err, errLineTooLong) {
			write(framing.EncodeError(framing.NullID, &framing.Error{Code: framing.CodeInvalidRequest, Message: "invalid request: message too large"}))
			continue
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			select {
			case lines <- line:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			return err
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes; a longer one is consumed
// and reported as errLineTooLong.
func readLine(r *bufio.Reader, max int64) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if int64(len(buf)+len(chunk)) > max {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, err
	}
}
