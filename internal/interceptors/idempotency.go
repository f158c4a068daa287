package interceptors

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/contract/toolresult"
	"github.com/toolsvc/toolsvc/internal/contract/wire"
	"github.com/toolsvc/toolsvc/internal/store"
)

// DefaultIdempotencyTTL is how long the result of a keyed call is kept for
// its repeats: 24 hours.
const DefaultIdempotencyTTL = 24 * time.Hour

// MaxIdempotencyKeyLen bounds an idempotency key (printable ASCII).
const MaxIdempotencyKeyLen = 255

// DefaultIdempotencyLease is how long a claimed key's owner is known alive
// without renewing its lease: it renews every third of it while its call
// runs, so a repeat learns that a replica died mid-call (SIGKILL, power)
// within this much, and answers "outcome unknown" instead of waiting out
// its deadline.
const DefaultIdempotencyLease = 10 * time.Second

// A repeat waits for the first call with its key between idempotencyPoll
// and idempotencyPollMax, doubling, and never past the first call's lease:
// a first call on this replica signals its end at once (flights), one on
// another replica is seen within idempotencyPollMax.
const (
	idempotencyPoll    = 20 * time.Millisecond
	idempotencyPollMax = 500 * time.Millisecond
)

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
// writing twice. A claim carries a lease that its owner renews while the
// call runs: a claim left unfinished whose lease lapsed belongs to a
// replica that stopped mid-call, and a repeat is told the outcome is
// unknown (ABANDONED) within the lease, instead of waiting for a result
// that never comes. A claim older than its tool's deadline and
// abandonGrace counts as abandoned too, leased or not (a claim made by a
// release without leases, or an owner stuck past its deadline). Keys live
// for ttl. Calls without side effects ignore the
// key: running them again is already the same as once.
func idempotent(st store.IdempotencyStore, ttl, lease time.Duration, deadlines Deadlines, logger *slog.Logger) grpc.UnaryServerInterceptor {
	var lastPurge atomic.Int64
	// flights are this replica's running claims: a repeat here waits on
	// its first call's end rather than on the store.
	var flights sync.Map // principal "\x00" key -> chan struct{}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		c := callFrom(ctx)
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
		flight := principal + "\x00" + key
		for poll := idempotencyPoll; ; poll = min(2*poll, idempotencyPollMax) {
			rec.CreatedAt = time.Now()
			rec.ExpiresAt = rec.CreatedAt.Add(ttl)
			rec.LeaseUntil = rec.CreatedAt.Add(lease)
			existing, claimed, err := st.ClaimIdempotency(ctx, rec)
			switch {
			case err != nil:
				return nil, err
			case claimed:
				// A repeat here between the claim and this Store looks at
				// the store again after its first poll.
				done := make(chan struct{})
				flights.Store(flight, done)
				defer func() { flights.CompareAndDelete(flight, done); close(done) }()
				return runClaimed(ctx, st, rec, lease, c, req, next, logger)
			case existing.Tool != rec.Tool || existing.Fingerprint != rec.Fingerprint:
				return nil, keyReused(existing)
			case existing.Done:
				return replay(c, existing.Response)
			case existing.Leased() && time.Now().After(existing.LeaseUntil):
				// The owner stopped renewing its lease: its replica
				// stopped mid-call, and no one will ever complete it.
				return nil, outcomeUnknown("ABANDONED")
			case time.Since(existing.CreatedAt) > deadlines.forClass(c.Tool.Spec.GetResponseTime())+abandonGrace:
				// Older than any run of this tool can be: a claim without
				// a lease whose owner stopped, one that outlived a failed
				// write, or an owner stuck past its deadline.
				return nil, outcomeUnknown("ABANDONED")
			}
			// The first call is still running: wait for its end when it
			// runs here, else for the next look at the store; never past
			// its lease.
			wait := poll
			var ended <-chan struct{}
			if f, ok := flights.Load(flight); ok {
				ended, wait = f.(chan struct{}), lease
			}
			if existing.Leased() {
				wait = min(wait, time.Until(existing.LeaseUntil)+time.Millisecond)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				e := toolerr.New(toolerr.Conflict, "a call with this idempotency key is still running; retry with the same key later")
				e.RetryAfter = time.Second
				return nil, e
			case <-ended:
				t.Stop()
			case <-t.C:
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
// releases the key when it failed. It renews the claim's lease while the
// call runs.
func runClaimed(ctx context.Context, st store.IdempotencyStore, rec *store.IdempotencyRecord, lease time.Duration, c *call, req any,
	next grpc.UnaryHandler, logger *slog.Logger) (any, error) {
	// Bookkeeping after the call must happen even when the caller is gone.
	after := context.WithoutCancel(ctx)
	stop := renewLease(after, st, rec, lease, c, logger)
	resp, err := next(ctx, req)
	stop()
	if err != nil {
		if code, unknown := mayHaveApplied(c, err); unknown {
			// The effect may stand: a retry with this key must not run the
			// tool again, nor be told it never ran.
			if uerr := st.CompleteIdempotency(after, rec.Principal, rec.Key, append([]byte{formUnknown}, code...)); uerr != nil {
				logger.ErrorContext(ctx, "idempotency key's unknown outcome not stored", slog.String("tool", c.Tool.Name),
					slog.String("trace_id", c.Facts.TraceID), slog.String("error", uerr.Error()))
			}
			return nil, err
		}
		if rerr := st.ReleaseIdempotency(after, rec.Principal, rec.Key); rerr != nil {
			logger.WarnContext(ctx, "idempotency key not released", slog.String("tool", c.Tool.Name),
				slog.String("trace_id", c.Facts.TraceID), slog.String("error", rerr.Error()))
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
			slog.String("trace_id", c.Facts.TraceID), slog.String("error", merr.Error()))
	}
	return resp, nil
}

// renewLease renews rec's lease every third of lease until the returned
// stop is called (and returns once renewing stopped). A renewal that
// fails is logged and tried again at the next tick: a repeat that finds
// the lease lapsed meanwhile is told the outcome is unknown, which stays
// true whatever this call does next.
func renewLease(ctx context.Context, st store.IdempotencyStore, rec *store.IdempotencyRecord, lease time.Duration,
	c *call, logger *slog.Logger) (stop func()) {
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			if err := st.RenewIdempotency(ctx, rec.Principal, rec.Key, time.Now().Add(lease)); err != nil {
				logger.WarnContext(ctx, "idempotency key's lease not renewed", slog.String("tool", c.Tool.Name),
					slog.String("trace_id", c.Facts.TraceID), slog.String("error", err.Error()))
			}
		}
	}()
	return func() { close(quit); <-stopped }
}

// replay answers a repeat with the stored result of the first call, in the
// form (typed RPC or ToolService.CallTool) this call asked for.
func replay(c *call, stored []byte) (any, error) {
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
func mayHaveApplied(c *call, err error) (string, bool) {
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
func idempotencyKey(c *call) (string, error) {
	vs := c.md.Get(wire.HeaderIdempotencyKey)
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
