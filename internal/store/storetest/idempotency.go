package storetest

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

func idemStore(t *testing.T, s store.Store) store.IdempotencyStore {
	t.Helper()
	is, ok := s.(store.IdempotencyStore)
	if !ok {
		t.Fatalf("%s store does not implement store.IdempotencyStore", s.Backend())
	}
	return is
}

func testIdempotency(t *testing.T, s store.Store) {
	is, ctx := idemStore(t, s), t.Context()
	now := time.Now()
	rec := func(principal, key, fp string, ttl time.Duration) *store.IdempotencyRecord {
		return &store.IdempotencyRecord{Principal: principal, Key: key, Tool: "add-memory", Fingerprint: fp,
			CreatedAt: now, ExpiresAt: now.Add(ttl)}
	}
	if _, claimed, err := is.ClaimIdempotency(ctx, rec("t\x1fa", "k1", "fp1", time.Hour)); err != nil || !claimed {
		t.Fatalf("first claim: claimed %v, err %v; want claimed", claimed, err)
	}
	// A second claim sees the running call.
	got, claimed, err := is.ClaimIdempotency(ctx, rec("t\x1fa", "k1", "fp2", time.Hour))
	if err != nil || claimed || got == nil || got.Done || got.Fingerprint != "fp1" || got.Tool != "add-memory" {
		t.Fatalf("second claim = %+v, %v, %v; want the running record with fp1", got, claimed, err)
	}
	// Another principal's same key is its own.
	if _, claimed, err := is.ClaimIdempotency(ctx, rec("t\x1fb", "k1", "fp1", time.Hour)); err != nil || !claimed {
		t.Fatalf("other principal's claim: claimed %v, err %v; want claimed", claimed, err)
	}
	if err := is.CompleteIdempotency(ctx, "t\x1fa", "k1", []byte("result")); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	got, claimed, err = is.ClaimIdempotency(ctx, rec("t\x1fa", "k1", "fp1", time.Hour))
	if err != nil || claimed || !got.Done || !bytes.Equal(got.Response, []byte("result")) {
		t.Fatalf("claim after completion = %+v, %v, %v; want done with the result", got, claimed, err)
	}
	// Release frees a running key, never a completed one.
	if err := is.ReleaseIdempotency(ctx, "t\x1fa", "k1"); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := is.ClaimIdempotency(ctx, rec("t\x1fa", "k1", "fp1", time.Hour)); got == nil || !got.Done {
		t.Fatalf("a completed key was released: %+v", got)
	}
	if err := is.ReleaseIdempotency(ctx, "t\x1fb", "k1"); err != nil {
		t.Fatal(err)
	}
	if _, claimed, err := is.ClaimIdempotency(ctx, rec("t\x1fb", "k1", "fp9", time.Hour)); err != nil || !claimed {
		t.Fatalf("claim after release: claimed %v, err %v; want claimed", claimed, err)
	}
	// An expired key is free again, and purged.
	old := &store.IdempotencyRecord{Principal: "t\x1fc", Key: "k2", Tool: "add-memory", Fingerprint: "fp1",
		CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Hour)}
	if _, claimed, err := is.ClaimIdempotency(ctx, old); err != nil || !claimed {
		t.Fatalf("claim of an old record: %v, %v", claimed, err)
	}
	if _, claimed, err := is.ClaimIdempotency(ctx, rec("t\x1fc", "k2", "fp2", time.Hour)); err != nil || !claimed {
		t.Fatalf("claim of an expired key: claimed %v, err %v; want claimed", claimed, err)
	}
	old.Key = "k3"
	if _, claimed, err := is.ClaimIdempotency(ctx, old); err != nil || !claimed {
		t.Fatalf("claim of an old record: %v, %v", claimed, err)
	}
	n, err := is.PurgeIdempotency(ctx, now)
	if err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v; want 1 expired record", n, err)
	}
}

func testIdempotencyConcurrentClaims(t *testing.T, s store.Store) {
	is, ctx := idemStore(t, s), t.Context()
	const n = 16
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		claimed int
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			now := time.Now()
			_, ok, err := is.ClaimIdempotency(ctx, &store.IdempotencyRecord{Principal: "t\x1fa", Key: "race",
				Tool: "add-memory", Fingerprint: "fp", CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
			if err != nil {
				t.Errorf("claim: %v", err)
				return
			}
			if ok {
				mu.Lock()
				claimed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if claimed != 1 {
		t.Fatalf("%d of %d concurrent claims of one key succeeded, want 1", claimed, n)
	}
}

// testIdempotencyLease: a claim carries its owner's lease, which the owner
// renews while its call runs; a claim without one (an earlier release's)
// reads as not leased.
func testIdempotencyLease(t *testing.T, s store.Store) {
	is, ctx := idemStore(t, s), t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	claim := &store.IdempotencyRecord{Principal: "t\x1fa", Key: "k1", Tool: "sync-knowledge", Fingerprint: "fp",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(10 * time.Second)}
	if _, claimed, err := is.ClaimIdempotency(ctx, claim); err != nil || !claimed {
		t.Fatalf("claim: claimed %v, err %v", claimed, err)
	}
	repeat := *claim
	repeat.CreatedAt, repeat.LeaseUntil = now.Add(time.Second), now.Add(11*time.Second)
	got, claimed, err := is.ClaimIdempotency(ctx, &repeat)
	if err != nil || claimed || !got.Leased() || !got.LeaseUntil.Equal(claim.LeaseUntil) {
		t.Fatalf("repeat = %+v, %v, %v; want the claim with its lease until %v", got, claimed, err, claim.LeaseUntil)
	}
	later := now.Add(time.Minute)
	if err := is.RenewIdempotency(ctx, "t\x1fa", "k1", later); err != nil {
		t.Fatalf("RenewIdempotency: %v", err)
	}
	if got, _, _ := is.ClaimIdempotency(ctx, &repeat); got == nil || !got.LeaseUntil.Equal(later) {
		t.Fatalf("after renewal = %+v; want the lease until %v", got, later)
	}
	if err := is.CompleteIdempotency(ctx, "t\x1fa", "k1", []byte("r")); err != nil {
		t.Fatal(err)
	}
	if err := is.RenewIdempotency(ctx, "t\x1fa", "k1", later.Add(time.Hour)); err != nil {
		t.Fatalf("RenewIdempotency of a done key: %v", err)
	}
	if got, _, _ := is.ClaimIdempotency(ctx, &repeat); got == nil || !got.Done || !got.LeaseUntil.Equal(later) {
		t.Fatalf("a done key's lease was renewed: %+v", got)
	}
	unleased := &store.IdempotencyRecord{Principal: "t\x1fa", Key: "k2", Tool: "add-memory", Fingerprint: "fp",
		CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if _, claimed, err := is.ClaimIdempotency(ctx, unleased); err != nil || !claimed {
		t.Fatalf("claim without a lease: %v, %v", claimed, err)
	}
	if got, _, _ := is.ClaimIdempotency(ctx, unleased); got == nil || got.Leased() {
		t.Fatalf("a claim without a lease reads as %+v; want not leased", got)
	}
}
