package cache

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMemoryEvictsLeastRecentlyUsedByBytes(t *testing.T) {
	t.Parallel()
	value := strings.Repeat("v", 100)
	entry := int64(64 + len(value)) // key digest + value
	m := NewMemory(3 * entry)
	a, b, c, d := testKey("t", "d", "a"), testKey("t", "d", "b"), testKey("t", "d", "c"), testKey("t", "d", "d")

	mustSet(t, m, a, value, time.Minute)
	mustSet(t, m, b, value, time.Minute)
	mustSet(t, m, c, value, time.Minute)
	mustHit(t, m, a, value) // a is now more recently used than b
	mustSet(t, m, d, value, time.Minute)

	mustMiss(t, m, b)
	for _, k := range []Key{a, c, d} {
		mustHit(t, m, k, value)
	}
	if got := m.Bytes(); got != 3*entry {
		t.Errorf("Bytes = %d, want %d", got, 3*entry)
	}
	if got := m.Stats().Evictions; got != 1 {
		t.Errorf("Evictions = %d, want 1", got)
	}

	// One large value displaces as many entries as it needs.
	big := strings.Repeat("x", int(2*entry))
	mustSet(t, m, b, big, time.Minute)
	if got, want := m.Len(), 1; got != want {
		t.Errorf("Len after a %d-byte value = %d, want %d", len(big), got, want)
	}
	if got := m.Bytes(); got > 3*entry {
		t.Errorf("Bytes = %d, above the budget %d", got, 3*entry)
	}
}

func TestMemorySkipsValuesLargerThanTheBudget(t *testing.T) {
	t.Parallel()
	m := NewMemory(1000)
	small := testKey("t", "d", "small")
	mustSet(t, m, small, "kept", time.Minute)
	mustSet(t, m, testKey("t", "d", "huge"), strings.Repeat("x", 1000), time.Minute)
	mustMiss(t, m, testKey("t", "d", "huge"))
	mustHit(t, m, small, "kept") // nothing was evicted for a value that could never fit
}

func TestMemoryDropsDeadEntriesBeforeLiveOnes(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	value := strings.Repeat("v", 100)
	m := NewMemory(2*int64(64+len(value)), WithClock(clock.Now))
	expired, stale := testKey("t", "short", "a"), testKey("t", "gone", "b")
	mustSet(t, m, expired, value, time.Second)
	mustSet(t, m, stale, value, time.Hour)
	if err := m.InvalidateDomain(context.Background(), "t", "gone"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	mustSet(t, m, testKey("t", "d", "c"), value, time.Hour)
	mustSet(t, m, testKey("t", "d", "d"), value, time.Hour)
	if got := m.Stats().Evictions; got != 0 {
		t.Errorf("Evictions = %d, want 0: only an expired and an invalidated entry had to go", got)
	}
}

func TestMemoryValuesAreCopies(t *testing.T) {
	t.Parallel()
	m := NewMemory(1 << 10)
	k := testKey("t", "d", "a")
	val := []byte("original")
	if err := m.Set(context.Background(), k, val, time.Minute); err != nil {
		t.Fatal(err)
	}
	val[0] = 'X'
	got, _, _ := m.Get(context.Background(), k)
	got[1] = 'Y'
	mustHit(t, m, k, "original")
}

// TestMemorySweepsDeadEntriesNobodyAsksFor: entries that expire or whose
// domain is invalidated leave the cache as later entries are set, without
// being looked up and well before the byte budget would push them out, and
// live entries stay.
func TestMemorySweepsDeadEntriesNobodyAsksFor(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	m := NewMemory(1<<30, WithClock(clock.Now))
	live := testKey("t", "long", "live")
	mustSet(t, m, live, "kept", time.Hour)
	for i := range 100 {
		mustSet(t, m, testKey("t", "short", strconv.Itoa(i)), "x", time.Second)
		mustSet(t, m, testKey("t", "gone", strconv.Itoa(i)), "y", time.Hour)
	}
	if err := m.InvalidateDomain(t.Context(), "t", "gone"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	// Each set sweeps a few entries; 200 dead ones go within 200/sweepBatch
	// sets, plus one pass to come round.
	for i := range 60 {
		mustSet(t, m, testKey("t", "new", strconv.Itoa(i)), "z", time.Hour)
	}
	if got, want := m.Len(), 1+60; got != want {
		t.Errorf("Len = %d, want %d (the live entry and the 60 new ones)", got, want)
	}
	mustHit(t, m, live, "kept")
	if got := m.Bytes(); got != int64(61*64+len("kept")+60) {
		t.Errorf("Bytes = %d, want the live entries' %d", got, 61*64+len("kept")+60)
	}
}
