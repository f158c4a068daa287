package cache

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// joined returns a hook for Group.joinHook and a function that waits until n callers have joined a flight.
func joined(tb testing.TB, g *Group) (wait func(n int)) {
	tb.Helper()
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	count := 0
	g.joinHook = func() {
		mu.Lock()
		count++
		mu.Unlock()
		cond.Broadcast()
	}
	return func(n int) {
		mu.Lock()
		defer mu.Unlock()
		for count < n {
			cond.Wait()
		}
	}
}

// blockingLoader returns a Loader that counts its calls and blocks until release is closed.
func blockingLoader(calls *atomic.Int64, release <-chan struct{}, val string) Loader {
	return func(ctx context.Context) ([]byte, bool, error) {
		calls.Add(1)
		<-release
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		return []byte(val), true, nil
	}
}

func TestGroupRunsConcurrentMissesOnce(t *testing.T) {
	t.Parallel()
	const callers = 50
	c := NewMemory(1 << 20)
	g := NewGroup(c)
	wait := joined(t, g)
	k := testKey("t1", "notes", "a")

	var calls atomic.Int64
	release := make(chan struct{})
	results := make([]Result, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			results[i], errs[i] = g.DoResult(context.Background(), k, time.Minute, blockingLoader(&calls, release, "v"))
		})
	}
	wait(callers)
	close(release)
	wg.Wait()

	if got := calls.Load(); got != 1 {
		t.Fatalf("loader ran %d times for %d identical misses, want 1", got, callers)
	}
	shared := 0
	for i, r := range results {
		if errs[i] != nil || string(r.Val) != "v" || r.Hit {
			t.Fatalf("caller %d = %+v, %v; want v, not a hit", i, r, errs[i])
		}
		if r.Shared {
			shared++
		}
	}
	if shared != callers-1 {
		t.Errorf("%d callers report Shared, want %d (all but the one that loaded)", shared, callers-1)
	}
	if got := g.Stats(); got.Misses != callers || got.Shared != callers-1 || got.Hits != 0 {
		t.Errorf("Stats = %+v, want %d misses of which %d shared", got, callers, callers-1)
	}

	val, hit, err := g.Do(context.Background(), k, time.Minute, failLoader(t))
	if err != nil || !hit || string(val) != "v" {
		t.Fatalf("Do after the load = %q, hit %t, %v; want a cache hit", val, hit, err)
	}
}

func TestGroupDoesNotCache(t *testing.T) {
	t.Parallel()
	errTool := errors.New("tool failed")
	tests := []struct {
		name    string
		first   Loader
		wantErr error
	}{
		{name: "errors", first: func(context.Context) ([]byte, bool, error) { return nil, true, errTool }, wantErr: errTool},
		{name: "uncacheable results", first: func(context.Context) ([]byte, bool, error) { return []byte("once"), false, nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewGroup(NewMemory(1 << 20))
			k := testKey("t1", "notes", "a")
			if _, _, err := g.Do(context.Background(), k, time.Minute, tt.first); !errors.Is(err, tt.wantErr) {
				t.Fatalf("first Do error = %v, want %v", err, tt.wantErr)
			}
			val, hit, err := g.Do(context.Background(), k, time.Minute, constLoader("second"))
			if err != nil || hit || string(val) != "second" {
				t.Fatalf("second Do = %q, hit %t, %v; want the loader to run again", val, hit, err)
			}
		})
	}
}

func TestGroupDegradesWhenTheCacheFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cache func(testing.TB) Cache
	}{
		{name: "failing cache", cache: func(testing.TB) Cache { return failingCache{} }},
		{name: "unreachable Redis", cache: func(tb testing.TB) Cache { return NewRedis(unreachableClient(tb)) }},
		{name: "silent Redis", cache: func(tb testing.TB) Cache { return NewRedis(blackHoleClient(tb)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &recorder{}
			g := NewGroup(tt.cache(t), WithLogger(slog.New(logs)))
			for range 3 {
				r, err := withinHangGuard(t, func() outcome {
					r, err := g.DoResult(context.Background(), testKey("t1", "notes", "a"), time.Minute, constLoader("loaded"))
					return outcome{r, err}
				}).unpack()
				if err != nil || string(r.Val) != "loaded" || r.Hit {
					t.Fatalf("DoResult = %+v, %v; want the loaded value", r, err)
				}
			}
			if got := g.Stats().Errors; got != 3 {
				t.Errorf("Errors = %d, want 3 (one failed lookup per call; nothing is stored after one)", got)
			}
			if got := logs.count(); got != 1 {
				t.Errorf("logged %d warnings, want 1: logging is throttled", got)
			}
		})
	}
}

func TestGroupStoreFailureDoesNotFailTheCall(t *testing.T) {
	t.Parallel()
	g := NewGroup(failingCache{getWorks: true})
	val, _, err := g.Do(context.Background(), testKey("t1", "notes", "a"), time.Minute, constLoader("loaded"))
	if err != nil || string(val) != "loaded" {
		t.Fatalf("Do = %q, %v; want the loaded value", val, err)
	}
	if got := g.Stats().Errors; got != 1 {
		t.Errorf("Errors = %d, want 1 failed store", got)
	}
}

func TestGroupLeaderCancellationDoesNotFailFollowers(t *testing.T) {
	t.Parallel()
	g := NewGroup(NewMemory(1 << 20))
	wait := joined(t, g)
	k := testKey("t1", "notes", "a")
	var calls atomic.Int64
	release := make(chan struct{})
	load := blockingLoader(&calls, release, "v") // fails if its context was canceled

	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, _, err := g.Do(leaderCtx, k, time.Minute, load)
		leaderErr <- err
	}()
	wait(1) // the leader's flight is registered before any follower joins

	const followers = 5
	type got struct {
		r   Result
		err error
	}
	results := make(chan got, followers)
	for range followers {
		go func() {
			r, err := g.DoResult(context.Background(), k, time.Minute, load)
			results <- got{r, err}
		}()
	}
	wait(1 + followers)
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader error = %v, want context.Canceled", err)
	}
	close(release)
	for range followers {
		r := <-results
		if r.err != nil || string(r.r.Val) != "v" || !r.r.Shared {
			t.Fatalf("follower = %+v, %v; want the shared value", r.r, r.err)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("loader ran %d times, want 1", got)
	}
	mustHit(t, g.cache, k, "v") // the canceled leader's load was still cached
}

func TestGroupFollowerStopsWaitingOnItsOwnContext(t *testing.T) {
	t.Parallel()
	g := NewGroup(NewMemory(1 << 20))
	wait := joined(t, g)
	k := testKey("t1", "notes", "a")
	var calls atomic.Int64
	release := make(chan struct{})
	load := blockingLoader(&calls, release, "v")

	leaderDone := make(chan error, 1)
	go func() {
		_, _, err := g.Do(context.Background(), k, time.Minute, load)
		leaderDone <- err
	}()
	wait(1)
	ctx, cancel := context.WithCancel(context.Background())
	followerDone := make(chan error, 1)
	go func() {
		_, _, err := g.Do(ctx, k, time.Minute, load)
		followerDone <- err
	}()
	wait(2)
	cancel()
	if err := <-followerDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("follower error = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-leaderDone; err != nil {
		t.Fatalf("leader error = %v", err)
	}
}

// TestGroupInvalidationDuringLoad checks that a load which began before InvalidateDomain neither stores its
// result nor serves callers who arrive after the invalidation.
func TestGroupInvalidationDuringLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		cache func(testing.TB) Generational
	}{
		{name: "memory", cache: func(testing.TB) Generational { return NewMemory(1 << 20) }},
		{name: "redis", cache: func(tb testing.TB) Generational { r, _, _ := newTestRedis(tb); return r }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := tt.cache(t)
			g := NewGroup(c)
			wait := joined(t, g)
			k := testKey("t1", "notes", "a")
			var calls atomic.Int64
			release := make(chan struct{})
			before := make(chan error, 1)
			go func() {
				_, _, err := g.Do(context.Background(), k, time.Minute, blockingLoader(&calls, release, "before"))
				before <- err
			}()
			wait(1)
			if err := c.InvalidateDomain(context.Background(), "t1", "notes"); err != nil {
				t.Fatal(err)
			}
			// Joining the old flight would block until release; the hang guard turns that into a failure.
			t.Cleanup(func() { closeOnce(release) })
			r, err := withinHangGuard(t, func() outcome {
				r, err := g.DoResult(context.Background(), k, time.Minute, constLoader("after"))
				return outcome{r, err}
			}).unpack()
			if err != nil || string(r.Val) != "after" || r.Shared {
				t.Fatalf("Do after the invalidation = %+v, %v; want its own load", r, err)
			}
			closeOnce(release)
			if err := <-before; err != nil {
				t.Fatal(err)
			}
			mustHit(t, c, k, "after") // the stale load did not overwrite the fresh entry
		})
	}
}

func TestGroupRecoversLoaderPanics(t *testing.T) {
	t.Parallel()
	g := NewGroup(NewMemory(1 << 20))
	_, _, err := g.Do(context.Background(), testKey("t1", "notes", "a"), time.Minute, func(context.Context) ([]byte, bool, error) {
		panic("boom")
	})
	var perr *PanicError
	if !errors.As(err, &perr) || perr.Value != "boom" || len(perr.Stack) == 0 {
		t.Fatalf("Do error = %v, want a *PanicError with the value and a stack", err)
	}
}

func TestGroupRejectsInvalidTTL(t *testing.T) {
	t.Parallel()
	g := NewGroup(NewMemory(1 << 20))
	if _, _, err := g.Do(context.Background(), testKey("t1", "notes", "a"), 0, failLoader(t)); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("Do error = %v, want ErrInvalidTTL", err)
	}
}

// TestGroupWithPlainCache covers caches that do not implement Generational.
func TestGroupWithPlainCache(t *testing.T) {
	t.Parallel()
	c := plainCache{NewMemory(1 << 20)}
	g := NewGroup(c)
	k := testKey("t1", "notes", "a")
	if _, hit, err := g.Do(context.Background(), k, time.Minute, constLoader("v")); err != nil || hit {
		t.Fatalf("first Do: hit %t, %v; want a miss", hit, err)
	}
	if val, hit, err := g.Do(context.Background(), k, time.Minute, failLoader(t)); err != nil || !hit || string(val) != "v" {
		t.Fatalf("second Do = %q, hit %t, %v; want a hit", val, hit, err)
	}
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func constLoader(val string) Loader {
	return func(context.Context) ([]byte, bool, error) { return []byte(val), true, nil }
}

// failLoader returns a Loader that fails the test if it runs.
func failLoader(tb testing.TB) Loader {
	tb.Helper()
	return func(context.Context) ([]byte, bool, error) {
		tb.Error("loader ran, want a cache hit")
		return nil, false, errors.New("unexpected load")
	}
}

type outcome struct {
	r   Result
	err error
}

func (o outcome) unpack() (Result, error) { return o.r, o.err }

// failingCache is a Cache whose backend is down; with getWorks, only writes fail.
type failingCache struct{ getWorks bool }

var errBackend = errors.New("backend down")

func (f failingCache) Get(context.Context, Key) ([]byte, bool, error) {
	if f.getWorks {
		return nil, false, nil
	}
	return nil, false, errBackend
}

func (failingCache) Set(context.Context, Key, []byte, time.Duration) error { return errBackend }

func (failingCache) InvalidateDomain(context.Context, string, string) error { return errBackend }

func (failingCache) Close() error { return nil }

// plainCache hides the Generational methods of the cache it wraps.
type plainCache struct{ Cache }

// recorder is a slog.Handler that counts the records it receives.
type recorder struct{ n atomic.Int64 }

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(context.Context, slog.Record) error { r.n.Add(1); return nil }

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }

func (r *recorder) WithGroup(string) slog.Handler { return r }

func (r *recorder) count() int { return int(r.n.Load()) }
