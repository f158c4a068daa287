package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// ServeStdio serves MCP over stdio: newline-delimited JSON-RPC messages on
// in, responses and notifications on out (nothing else is ever written to
// out). authorization is the authorization header value sent with every
// call ("" in development mode). Requests run concurrently, so
// notifications/cancelled can end one; ServeStdio returns when in ends
// (after the running requests finish) or ctx is done.
func (b *Bridge) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, authorization string) error {
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
	md := forwardedValues(authorization)
	p := newPeer("stdio", "")
	// Server-initiated messages (tools/list_changed) are queued for this
	// loop to write, so that whoever changed the tools never waits on a
	// client; a full queue drops them, as a session's event streams do.
	notes := make(chan []byte, 16)
	p.out = func(msg []byte) {
		select {
		case notes <- msg:
		default:
		}
	}
	b.stdio.Store(p, struct{}{})
	defer b.stdio.Delete(p)
	defer p.end()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		readErr <- readLines(ctx, bufio.NewReaderSize(in, 64<<10), b.cfg.MaxRequestBytes, lines, write)
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
				// The client is gone: its subscriptions end unanswered,
				// its other requests finish.
				b.listeners.endPeer(p)
				wg.Wait()
				if err := <-readErr; err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				return nil
			}
			principal, err := b.cfg.Auth.Authenticate(ctx, authorization)
			if err != nil {
				principal = nil // the chain reports it on calls; listings refuse
			}
			x := &exchange{authorization: authorization, md: md, principal: principal, peer: p, notify: write, revision: p.negotiated(),
				ask: func(msg []byte) error { write(msg); return nil }}
			if framing.IsArray(line) {
				write(b.stdioBatch(ctx, x, line))
				continue
			}
			m, re := framing.Parse(line)
			if re != nil {
				write(framing.EncodeError(framing.NullID, re))
				continue
			}
			if m.IsNotification() || m.IsResponse() {
				b.handle(ctx, x, &m) // in order, so a cancellation is seen at once
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				writeResponse(b.answer(ctx, x, &m))
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
			write(framing.EncodeError(framing.NullID, &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: message too large"}))
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

// stdioBatch answers a batch (revision 2025-03-26 only), bounded as
// batch.go says.
func (b *Bridge) stdioBatch(ctx context.Context, x *exchange, line []byte) []byte {
	msgs, re := framing.ParseBatch(line, b.cfg.BatchMaxMessages)
	if re != nil {
		return framing.EncodeError(framing.NullID, re)
	}
	if len(msgs) == 0 {
		return framing.EncodeError(framing.NullID, &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: empty batch"})
	}
	if x.revision != Revision20250326 {
		return framing.EncodeError(framing.NullID, &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: JSON-RPC batches are not supported in MCP revision " + x.revision})
	}
	x.batch = true
	resps := b.answerBatch(ctx, x, msgs, func(m *framing.Message) []byte {
		if m.Method == "initialize" {
			return framing.EncodeError(framing.IDOrNull(m.ID), &framing.Error{Code: CodeInvalidRequest, Message: "invalid request: initialize cannot be batched"})
		}
		return nil
	})
	if len(resps) == 0 {
		return nil
	}
	return framing.JoinBatch(resps)
}
