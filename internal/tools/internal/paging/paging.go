// Package paging gives the tools' ranked results opaque cursors
// (docs/CONTRACTS.md, "Paging"). The first page of a search saves the rest
// of its results in the store (store.PageStore); its cursor names that
// result set and a position in it, and is bound to the caller and the
// request and signed with the store's cursor key, so it cannot be altered,
// replayed by another caller or reused for another query. Every result of
// the set is returned exactly once however memories or knowledge change
// while a caller pages; a result deleted meanwhile is left out.
package paging

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/internal/scope"
)

// TTL is how long a cursor works after its first page.
const TTL = 15 * time.Minute

// Field is the request field a cursor travels in.
const Field = "cursor"

// version starts every cursor: a later format can be told apart.
const version = 1

// Set is a result set a cursor pages through.
type Set struct {
	store.ResultPages
	key []byte
}

// Principal identifies the caller of a paged search: tenant and subject.
func Principal(c scope.Caller) string {
	return c.Tenant + "\x1f" + c.IDs[scope.KeySubject]
}

// Fingerprint identifies a request without its cursor and limit: the
// fields that choose the result set. clear empties those two on a clone.
func Fingerprint(tool string, req proto.Message, clear func(proto.Message)) string {
	c := proto.Clone(req)
	clear(c)
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	sum := sha256.Sum256(append([]byte(tool+"\x00"), b...))
	return hex.EncodeToString(sum[:16])
}

// Save keeps items (the results after the first page, encoded by the
// tool) for caller and returns the set whose Cursor(0) leads to them. The
// store bounds what each caller and tenant keeps (store.PrincipalPagesShare).
func Save(ctx context.Context, ps store.PageStore, caller scope.Caller, query string, items []byte, now time.Time) (*Set, error) {
	key, err := cursorKey(ctx, ps)
	if err != nil {
		return nil, err
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	rp := store.ResultPages{ID: hex.EncodeToString(id[:]), Principal: Principal(caller), Tenant: caller.Tenant, Query: query, Items: items,
		CreatedAt: now, ExpiresAt: now.Add(TTL)}
	if err := ps.SaveResultPages(ctx, &rp); err != nil {
		return nil, err
	}
	purgeExpired(ctx, ps, now)
	return &Set{ResultPages: rp, key: key}, nil
}

// purgeEvery is how often a process deletes expired result sets.
const purgeEvery = time.Minute

var lastPurge atomic.Int64

// purgeExpired deletes expired result sets, at most once per purgeEvery
// per process, on the save that finds the time come (one indexed DELETE).
// A failure is left for the next time: an expired set is never read.
func purgeExpired(ctx context.Context, ps store.PageStore, now time.Time) {
	prev := lastPurge.Load()
	if now.UnixNano()-prev < int64(purgeEvery) || !lastPurge.CompareAndSwap(prev, now.UnixNano()) {
		return
	}
	_, _ = ps.PurgeResultPages(ctx, now)
}

// Cursor is the cursor of the page that starts at offset of the set's
// items.
func (s *Set) Cursor(offset int) string {
	id, _ := hex.DecodeString(s.ID)
	body := append([]byte{version}, id...)
	body = binary.AppendUvarint(body, uint64(offset))
	return base64.RawURLEncoding.EncodeToString(append(body, s.mac(body)...))
}

// mac signs a cursor's body for this set's caller and query.
func (s *Set) mac(body []byte) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write(body)
	h.Write([]byte{0})
	h.Write([]byte(s.Principal))
	h.Write([]byte{0})
	h.Write([]byte(s.Query))
	return h.Sum(nil)[:16]
}

// Refusals of a cursor, each an INVALID_INPUT on the cursor field with a
// next step.
var (
	errMalformed = toolerr.Invalid(Field, "cursor.valid",
		"the cursor is not one this service issued, or was altered: repeat the search without a cursor")
	errExpired = toolerr.Invalid(Field, "cursor.expired",
		"the cursor expired (cursors work for %s after the first page): repeat the search without a cursor", TTL)
	errOtherCaller = toolerr.Invalid(Field, "cursor.owner",
		"the cursor was issued to another caller: repeat the search without a cursor")
	errOtherQuery = toolerr.Invalid(Field, "cursor.query",
		"the cursor was issued for a different request: send the same arguments as the first page (only limit may change), or search again without a cursor")
)

// Open reads a cursor: its set, saved by Save for the same caller and
// request, and the offset of the page it starts.
func Open(ctx context.Context, ps store.PageStore, cursor, principal, query string, now time.Time) (*Set, int, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) < 1+16+1+16 || raw[0] != version {
		return nil, 0, errMalformed
	}
	body, sum := raw[:len(raw)-16], raw[len(raw)-16:]
	offset, n := binary.Uvarint(body[17:])
	if n <= 0 || 17+n != len(body) || offset > 1<<20 {
		return nil, 0, errMalformed
	}
	key, err := cursorKey(ctx, ps)
	if err != nil {
		return nil, 0, err
	}
	// The signature is checked for this caller and request first: a
	// cursor that passes names a set they own, unless it expired.
	s := &Set{ResultPages: store.ResultPages{Principal: principal, Query: query}, key: key}
	signed := hmac.Equal(s.mac(body), sum)
	rp, err := ps.ResultPages(ctx, hex.EncodeToString(body[1:17]), now)
	switch {
	case errors.Is(err, store.ErrNotFound) && signed:
		return nil, 0, errExpired
	case errors.Is(err, store.ErrNotFound):
		return nil, 0, errMalformed
	case err != nil:
		return nil, 0, err
	case !signed && rp.Principal != principal:
		return nil, 0, errOtherCaller
	case !signed && rp.Query != query:
		return nil, 0, errOtherQuery
	case !signed:
		return nil, 0, errMalformed
	}
	s.ResultPages = *rp
	return s, int(offset), nil
}

// keys caches each store's cursor key, which never changes once made.
var keys sync.Map // store.PageStore -> []byte

func cursorKey(ctx context.Context, ps store.PageStore) ([]byte, error) {
	if k, ok := keys.Load(ps); ok {
		return k.([]byte), nil
	}
	k, err := ps.CursorKey(ctx)
	if err != nil {
		return nil, err
	}
	keys.Store(ps, k)
	return k, nil
}

// Seal signs the cursor of a list that pages by position (the audit
// trail, append-only, needs no saved set) for the caller and the request,
// so that it cannot be altered or used by another caller or for another
// request.
func Seal(ctx context.Context, ps store.PageStore, inner, principal, query string) (string, error) {
	if inner == "" {
		return "", nil
	}
	key, err := cursorKey(ctx, ps)
	if err != nil {
		return "", err
	}
	body := append([]byte{version}, inner...)
	s := &Set{ResultPages: store.ResultPages{Principal: principal, Query: query}, key: key}
	return base64.RawURLEncoding.EncodeToString(append(body, s.mac(body)...)), nil
}

// Unseal returns the inner cursor of a sealed one, or INVALID_INPUT on
// field when it was altered, or issued to another caller or for another
// request.
func Unseal(ctx context.Context, ps store.PageStore, field, sealed, principal, query string) (string, error) {
	bad := toolerr.Invalid(field, "cursor.valid",
		"the cursor was altered, or issued to another caller or for other filters: repeat the first request without a cursor")
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil || len(raw) < 1+1+16 || raw[0] != version {
		return "", bad
	}
	key, err := cursorKey(ctx, ps)
	if err != nil {
		return "", err
	}
	body, sum := raw[:len(raw)-16], raw[len(raw)-16:]
	s := &Set{ResultPages: store.ResultPages{Principal: principal, Query: query}, key: key}
	if !hmac.Equal(s.mac(body), sum) {
		return "", bad
	}
	return string(body[1:]), nil
}
