package paging_test

import (
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/paging"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
)

func pageStore(t *testing.T) store.PageStore {
	t.Helper()
	ps, ok := teststore.SQLite(t).(store.PageStore)
	if !ok {
		t.Fatal("the SQLite store is not a PageStore")
	}
	return ps
}

// rule returns the rule of an INVALID_INPUT on the cursor field.
func rule(t *testing.T, err error) string {
	t.Helper()
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Code != toolerr.InvalidInput || len(te.Violations) != 1 || te.Violations[0].GetField() != "cursor" {
		t.Fatalf("error = %v, want INVALID_INPUT on cursor", err)
	}
	return te.Violations[0].GetRule()
}

func TestCursorRoundTripAndRefusals(t *testing.T) {
	ps, ctx, now := pageStore(t), t.Context(), time.Now()
	aliceCaller := scope.Caller{Tenant: "acme", IDs: map[string]string{scope.KeySubject: "alice"}}
	alice := paging.Principal(aliceCaller)
	bob := paging.Principal(scope.Caller{Tenant: "acme", IDs: map[string]string{scope.KeySubject: "bob"}})
	set, err := paging.Save(ctx, ps, aliceCaller, "q1", []byte("items"), now)
	if err != nil {
		t.Fatal(err)
	}
	cursor := set.Cursor(7)
	got, off, err := paging.Open(ctx, ps, cursor, alice, "q1", now)
	if err != nil || off != 7 || string(got.Items) != "items" {
		t.Fatalf("Open = %v, %d, %v; want the set at 7", got, off, err)
	}
	if _, _, err := paging.Open(ctx, ps, cursor, bob, "q1", now); rule(t, err) != "cursor.owner" {
		t.Errorf("another caller: rule %s, want cursor.owner", rule(t, err))
	}
	if _, _, err := paging.Open(ctx, ps, cursor, alice, "q2", now); rule(t, err) != "cursor.query" {
		t.Errorf("another query: rule %s, want cursor.query", rule(t, err))
	}
	if _, _, err := paging.Open(ctx, ps, cursor, alice, "q1", now.Add(paging.TTL+time.Second)); rule(t, err) != "cursor.expired" {
		t.Errorf("after the TTL: rule %s, want cursor.expired", rule(t, err))
	}
	// Each byte altered: the offset, the set id, the signature.
	raw, _ := base64.RawURLEncoding.DecodeString(cursor)
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		_, _, err := paging.Open(ctx, ps, base64.RawURLEncoding.EncodeToString(b), alice, "q1", now)
		if r := rule(t, err); r != "cursor.valid" {
			t.Errorf("byte %d altered: rule %s, want cursor.valid", i, r)
		}
	}
	for _, bad := range []string{"", "not a cursor", "AAAA", base64.RawURLEncoding.EncodeToString(make([]byte, 40))} {
		if _, _, err := paging.Open(ctx, ps, bad, alice, "q1", now); rule(t, err) != "cursor.valid" {
			t.Errorf("cursor %q: rule %s, want cursor.valid", bad, rule(t, err))
		}
	}
}

func TestFingerprintIgnoresOnlyWhatClearClears(t *testing.T) {
	clear := func(m proto.Message) { delete(m.(*structpb.Struct).Fields, "cursor") }
	req := func(query, cursor string) *structpb.Struct {
		s, _ := structpb.NewStruct(map[string]any{"query": query, "cursor": cursor})
		return s
	}
	a := paging.Fingerprint("search-memories", req("x", "c1"), clear)
	if b := paging.Fingerprint("search-memories", req("x", "c2"), clear); a != b {
		t.Error("the cursor changed the fingerprint")
	}
	if b := paging.Fingerprint("search-memories", req("y", "c1"), clear); a == b {
		t.Error("the query did not change the fingerprint")
	}
	if b := paging.Fingerprint("query-knowledge", req("x", "c1"), clear); a == b {
		t.Error("the tool did not change the fingerprint")
	}
	r := req("x", "c1")
	paging.Fingerprint("search-memories", r, clear)
	if r.Fields["cursor"].GetStringValue() != "c1" {
		t.Error("Fingerprint cleared the caller's request, not a clone")
	}
}

// TestSaveDeletesExpiredSets: a save purges the sets that expired.
func TestSaveDeletesExpiredSets(t *testing.T) {
	ps, ctx := pageStore(t), t.Context()
	old := time.Now().Add(-2 * paging.TTL)
	stale, err := paging.Save(ctx, ps, scope.Caller{Tenant: "t", IDs: map[string]string{scope.KeySubject: "p"}}, "q", []byte("old"), old)
	if err != nil {
		t.Fatal(err)
	}
	// The next save purges it: the process has not purged for a while.
	paging.ResetPurge()
	if _, err := paging.Save(ctx, ps, scope.Caller{Tenant: "t", IDs: map[string]string{scope.KeySubject: "p"}}, "q", []byte("new"), time.Now()); err != nil {
		t.Fatal(err)
	}
	if n, err := ps.PurgeResultPages(ctx, time.Now()); err != nil || n != 0 {
		t.Errorf("after the saves %d expired sets were left (err %v), want 0", n, err)
	}
	if _, err := ps.ResultPages(ctx, stale.ID, old); err == nil {
		t.Error("the expired set is still stored")
	}
}

func TestItemsRoundTripAndTruncation(t *testing.T) {
	b := paging.AppendUint(nil, 3)
	b = paging.AppendString(b, "mem_0123")
	b = paging.AppendFloat(b, 0.8125)
	b = append(b, 0x02)
	r := paging.NewReader(b)
	if n, id, f, c := r.Uint(10), r.String(), r.Float(), r.Byte(); r.Err() != nil || n != 3 || id != "mem_0123" || f != 0.8125 || c != 0x02 {
		t.Fatalf("read %d %q %v %x (err %v), want what was written", n, id, f, c, r.Err())
	}
	for cut := range len(b) {
		r := paging.NewReader(b[:cut])
		r.Uint(10)
		_ = r.String()
		r.Float()
		r.Byte()
		if !errors.Is(r.Err(), paging.ErrBadItems) {
			t.Errorf("cut at %d of %d: err %v, want ErrBadItems", cut, len(b), r.Err())
		}
	}
	if r := paging.NewReader(paging.AppendUint(nil, 11)); r.Uint(10) != 0 || r.Err() == nil {
		t.Error("a count above its bound was read")
	}
}
