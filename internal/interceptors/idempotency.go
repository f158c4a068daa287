package interceptors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/toolresult"
	"github.com/toolsvc/toolsvc/internal/store"
)

// DefaultIdempotencyTTL is how long the result of a keyed call is kept for
// its repeats: 24 hours.
const DefaultIdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKeyLen bounds an idempotency key (printable ASCII).
const MaxIdempotencyKeyLen = 255

// idempotencyPoll is how often a repeat waits for the first call with its
// key to finish (on this replica or another).
const idempotencyPoll = 20 * time.Millisecond

// Forms of a stored response: the first byte says which message follows.
const (
	formTyped   byte = 't'
	formGeneric byte = 'g'
	// formUnknown is the outcome of a call that failed after its tool ran,
	// in a way that may have left its effect applied (see mayHaveApplied);
	// the failure's code follows.
	formUnknown byte = 'u'
)

// idempotent is the contract's "calling multiple times = once" for tools with
// side effects. A call that carries an idempotency key (the Idempotency-Key
// header, gRPC metadata of that name, or MCP's _meta.idempotencyKey) claims
// the key for its principal in the store, so it holds across replicas; a
// repeat with the same arguments gets the first call's result (metadata
// replayed: true) without the tool running again, and waits while the first
// call is still running; the same key with other arguments is CONFLICT. A
// call that failed before it could have had an effect releases its key, so
// a retry runs the tool; one that failed after its tool ran in a way that
// may have left the effect applied (a timeout, the store failing mid-write)
// keeps it with the outcome "unknown", so a retry is told so instead of
// writing twice. A claim left unfinished for longer than its tool's
// deadline (and abandonGrace) belongs to a replica that stopped mid-call:
// a repeat is told the outcome is unknown at once, instead of waiting for
// a result that never comes until the key expires. Keys live for ttl.
// Calls without side effects ignore the key: running them again is already
// the same as once.
func idempotent(st store.IdempotencyStore, ttl time.Duration, deadlines Deadlines, logger *slog.Logger) grpc.UnaryServerInterceptor {
	var lastPurge atomic.Int64
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := CallFrom(ctx)
		if c.Tool == nil || c.Principal == nil {
			return next(ctx, req)
		}
		key, err := idempotencyKey(c)
		if err != nil || key == "" {
			if err != nil {
				return nil, err
			}
			return next(ctx, req)
		}
		c.IdempotencyKey = key
		if st == nil || !mutates(c.Tool) {
			return next(ctx, req)
		}
		purgeExpired(ctx, st, &lastPurge, logger)
		args, err := deterministic.Marshal(c.Request)
		if err != nil {
			return nil, toolerr.Wrap(err, toolerr.Internal, "internal error")
		}
		sum := sha256.Sum256(append([]byte(c.Tool.Name+"\x00"), args...))
		principal := c.Principal.Tenant + "\x1f" + c.Principal.Subject
		rec := &store.IdempotencyRecord{Principal: principal, Key: key, Tool: c.Tool.Name, Fingerprint: hex.EncodeToString(sum[:])}
		for {
			rec.CreatedAt = time.Now()
			rec.ExpiresAt = rec.CreatedAt.Add(ttl)
			existing, claimed, err := st.ClaimIdempotency(ctx, rec)
			switch {
			case err != nil:
				return nil, err
			case claimed:
				return runClaimed(ctx, st, rec, c, req, next, logger)
			case existing.Tool != rec.Tool || existing.Fingerprint != rec.Fingerprint:
				return nil, keyReused(existing)
			case existing.Done:
				return replay(c, existing.Response)
			case time.Since(existing.CreatedAt) > deadlines.forClass(c.Tool.Spec.GetResponseTime())+abandonGrace:
				// Older than any run of this tool can be: the replica that
				// claimed it stopped mid-call (or its claim outlived a
				// failed write), and no one will ever complete it.
				return nil, outcomeUnknown("ABANDONED")
			}
			// The first call is still running: wait for its result.
			select {
			case <-ctx.Done():
				e := toolerr.New(toolerr.Conflict, "a call with this idempotency key is still running; retry with the same key later")
				e.RetryAfter = time.Second
				return nil, e
			case <-time.After(idempotencyPoll):
			}
		}
	}
}

// abandonGrace is how much longer than its tool's deadline a claim may stay
// unfinished before a repeat treats it as abandoned: room for the first
// call's bookkeeping after its deadline and for clocks of replicas that
// differ a little.
const abandonGrace = 5 * time.Second

// idempotencyPurgeEvery is how often a process deletes expired keys.
const idempotencyPurgeEvery = time.Minute

// purgeExpired deletes expired keys, at most once per idempotencyPurgeEvery
// per process, on the call that finds the time come (one indexed DELETE; a
// claim replaces an expired key of its own anyway, this keeps the table
// from growing).
func purgeExpired(ctx context.Context, st store.IdempotencyStore, last *atomic.Int64, logger *slog.Logger) {
	now := time.Now()
	prev := last.Load()
	if now.UnixNano()-prev < int64(idempotencyPurgeEvery) || !last.CompareAndSwap(prev, now.UnixNano()) {
		return
	}
	if _, err := st.PurgeIdempotency(ctx, now); err != nil {
		logger.WarnContext(ctx, "expired idempotency keys not purged", slog.String("error", err.Error()))
	}
}

// runClaimed runs the call that claimed rec and keeps its result, or
// releases the key when it failed.
func runClaimed(ctx context.Context, st store.IdempotencyStore, rec *store.IdempotencyRecord, c *Call, req any,
	next grpc.UnaryHandler, logger *slog.Logger) (any, error) {
	// Bookkeeping after the call must happen even when the caller is gone.
	after := context.WithoutCancel(ctx)
	resp, err := next(ctx, req)
	if err != nil {
		if code, unknown := mayHaveApplied(c, err); unknown {
			// The effect may stand: a retry with this key must not run the
			// tool again, nor be told it never ran.
			if uerr := st.CompleteIdempotency(after, rec.Principal, rec.Key, append([]byte{formUnknown}, code...)); uerr != nil {
				logger.ErrorContext(ctx, "idempotency key's unknown outcome not stored", slog.String("tool", c.Tool.Name),
					slog.String("trace_id", c.Context.GetTraceId()), slog.String("error", uerr.Error()))
			}
			return nil, err
		}
		if rerr := st.ReleaseIdempotency(after, rec.Principal, rec.Key); rerr != nil {
			logger.WarnContext(ctx, "idempotency key not released", slog.String("tool", c.Tool.Name),
				slog.String("trace_id", c.Context.GetTraceId()), slog.String("error", rerr.Error()))
		}
		return nil, err
	}
	m, ok := resp.(proto.Message)
	if !ok {
		return resp, nil
	}
	form := formTyped
	if c.Generic {
		form = formGeneric
	}
	b, merr := deterministic.Marshal(m)
	if merr == nil {
		merr = st.CompleteIdempotency(after, rec.Principal, rec.Key, append([]byte{form}, b...))
	}
	if merr != nil {
		// The tool ran and its result stands; a repeat will wait for a
		// result that never comes, until the key expires, rather than
		// run the tool twice.
		logger.ErrorContext(ctx, "idempotent result not stored", slog.String("tool", c.Tool.Name),
			slog.String("trace_id", c.Context.GetTraceId()), slog.String("error", merr.Error()))
	}
	return resp, nil
}

// replay answers a repeat with the stored result of the first call, in the
// form (typed RPC or ToolService.CallTool) this call asked for.
func replay(c *Call, stored []byte) (any, error) {
	if len(stored) == 0 {
		return nil, toolerr.New(toolerr.Internal, "internal error")
	}
	form, b := stored[0], stored[1:]
	if form == formUnknown {
		return nil, outcomeUnknown(string(b))
	}
	var out proto.Message
	switch {
	case form == formGeneric && c.Generic, form == formTyped && !c.Generic:
		out = c.Tool.Output.New().Interface()
		if c.Generic {
			out = &toolsvcv1.CallToolResponse{}
		}
		if err := proto.Unmarshal(b, out); err != nil {
			return nil, toolerr.Wrap(err, toolerr.Internal, "internal error")
		}
	case form == formTyped: // asked through CallTool
		typed := c.Tool.Output.New().Interface()
		if err := proto.Unmarshal(b, typed); err != nil {
			return nil, toolerr.Wrap(err, toolerr.Internal, "internal error")
		}
		g, err := toolresult.Generic(typed)
		if err != nil {
			return nil, err
		}
		out = g
	default: // stored from CallTool, asked through the typed RPC
		g := &toolsvcv1.CallToolResponse{}
		if err := proto.Unmarshal(b, g); err != nil {
			return nil, toolerr.Wrap(err, toolerr.Internal, "internal error")
		}
		out = c.Tool.Output.New().Interface()
		if err := toolresult.Typed(g, out); err != nil {
			return nil, err
		}
	}
	c.Replayed = true
	return out, nil
}

// mayHaveApplied reports whether a failed call may have left its effect
// applied, and its code: the tool's handler was entered and the failure is
// one that can strike after a commit (the deadline or the caller's
// cancellation, the store or another dependency failing, an internal
// fault). A failure the tool decided (invalid input, not found, a
// conflict, ...) had no effect.
func mayHaveApplied(c *Call, err error) (string, bool) {
	if !c.Ran() {
		return "", false
	}
	switch code := toolerr.Classify(err).Code; code {
	case toolerr.Timeout, toolerr.ProviderError, toolerr.Internal:
		return string(code), true
	}
	return "", false
}

// outcomeUnknown answers a repeat of a keyed call whose first run failed
// after its tool ran (code): its effect may or may not have been applied,
// and running it again could apply it twice. Retrying the same key cannot
// change that (Final); the caller checks, then uses a new key.
func outcomeUnknown(code string) *toolerr.Error {
	e := toolerr.New(toolerr.Conflict, "the first call with this idempotency key failed (%s) after the tool ran: "+
		"its effect may have been applied. Check whether it was (list or search) before calling again with a new key", code).
		WithDetails(map[string]any{"outcome": "unknown", "firstErrorCode": code})
	e.Final = true
	return e
}

// keyReused is the CONFLICT of a key sent again with other arguments:
// retrying it cannot succeed, a new key is needed.
func keyReused(existing *store.IdempotencyRecord) *toolerr.Error {
	e := toolerr.New(toolerr.Conflict, "this idempotency key was used for a call with other arguments; use a new key for a new call").
		WithDetails(map[string]any{"firstUsedAt": existing.CreatedAt.UTC().Format(time.RFC3339), "tool": existing.Tool})
	e.Final = true
	return e
}

// idempotencyKey is the call's key: printable ASCII, at most
// MaxIdempotencyKeyLen bytes; anything else is INVALID_INPUT.
func idempotencyKey(c *Call) (string, error) {
	vs := c.md.Get(HeaderIdempotencyKey)
	if len(vs) == 0 {
		return "", nil
	}
	v := vs[len(vs)-1]
	bad := len(v) == 0 || len(v) > MaxIdempotencyKeyLen
	for i := 0; i < len(v) && !bad; i++ {
		bad = v[i] < 0x21 || v[i] > 0x7e
	}
	if bad {
		return "", toolerr.Invalid("Idempotency-Key", "idempotency_key.format",
			"must be 1 to %d printable ASCII characters without spaces", MaxIdempotencyKeyLen)
	}
	return v, nil
}

// mutates reports whether running t twice could differ from running it
// once.
func mutates(t *registry.Tool) bool {
	return t.Spec.GetSideEffect() || t.Spec.GetDestructive()
}
