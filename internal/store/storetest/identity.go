package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
)

// testSigningKeys: replicas adding the key of one period at once store
// one key, which all of them read back; expired keys are not returned
// and are purged.
func testSigningKeys(t *testing.T, s store.Store) {
	ks, ok := s.(store.SigningKeyStore)
	if !ok {
		t.Fatalf("%s store does not implement store.SigningKeyStore", s.Backend())
	}
	ctx, now := t.Context(), time.Now().UTC().Truncate(time.Microsecond)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			errs[i] = ks.AddSigningKey(ctx, &store.SigningKey{ID: "k1", Alg: "EdDSA", Private: []byte{byte(i), 1, 2},
				NotBefore: now, NotAfter: now.Add(time.Hour)})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("AddSigningKey: %v", err)
		}
	}
	if err := ks.AddSigningKey(ctx, &store.SigningKey{ID: "k0", Alg: "EdDSA", Private: []byte("old"),
		NotBefore: now.Add(-2 * time.Hour), NotAfter: now.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, err := ks.SigningKeys(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "k1" || got[0].Alg != "EdDSA" || len(got[0].Private) != 3 ||
		!got[0].NotBefore.Equal(now) || !got[0].NotAfter.Equal(now.Add(time.Hour)) {
		t.Fatalf("SigningKeys = %+v, want the one unexpired key k1", got)
	}
	again, _ := ks.SigningKeys(ctx, now)
	if !bytes.Equal(again[0].Private, got[0].Private) {
		t.Error("two reads disagree on the winning key")
	}
	n, err := ks.PurgeSigningKeys(ctx, now)
	if err != nil || n != 1 {
		t.Errorf("PurgeSigningKeys = %d, %v; want 1", n, err)
	}
	if all, _ := ks.SigningKeys(ctx, now.Add(-24*time.Hour)); len(all) != 1 {
		t.Errorf("after the purge %d keys remain, want 1", len(all))
	}
}

// testUserCredentials: a caller's credential is per tenant, subject and
// upstream; storing again replaces it; deleting says whether there was
// one.
func testUserCredentials(t *testing.T, s store.Store) {
	cs, ok := s.(store.UserCredentialStore)
	if !ok {
		t.Fatalf("%s store does not implement store.UserCredentialStore", s.Backend())
	}
	ctx := t.Context()
	put := func(tenant, subject, upstream, sealed string) {
		t.Helper()
		if err := cs.PutUserCredential(ctx, &store.UserCredential{Tenant: tenant, Subject: subject, Upstream: upstream,
			Sealed: []byte(sealed), KeyID: "k1"}); err != nil {
			t.Fatal(err)
		}
	}
	put("acme", "alice", "github", "v1")
	put("acme", "alice", "github", "v2")
	put("acme", "bob", "github", "b")
	put("other", "alice", "github", "o")
	for _, c := range []struct{ tenant, subject, upstream, want string }{
		{"acme", "alice", "github", "v2"}, {"acme", "bob", "github", "b"}, {"other", "alice", "github", "o"}, {"acme", "alice", "jira", ""},
	} {
		got, err := cs.UserCredential(ctx, c.tenant, c.subject, c.upstream)
		switch {
		case c.want == "" && !errors.Is(err, store.ErrNotFound):
			t.Errorf("%s/%s/%s: err = %v, want ErrNotFound", c.tenant, c.subject, c.upstream, err)
		case c.want != "" && (err != nil || string(got.Sealed) != c.want || got.KeyID != "k1" || got.UpdatedAt.IsZero()):
			t.Errorf("%s/%s/%s = %+v, %v; want %s", c.tenant, c.subject, c.upstream, got, err, c.want)
		}
	}
	for i, want := range []bool{true, false} {
		ok, err := cs.DeleteUserCredential(ctx, "acme", "alice", "github")
		if err != nil || ok != want {
			t.Errorf("delete %d = %v, %v; want %v", i, ok, err, want)
		}
	}
	if _, err := cs.UserCredential(ctx, "acme", "alice", "github"); !errors.Is(err, store.ErrNotFound) {
		t.Error(fmt.Sprint("a deleted credential is still read: ", err))
	}
}
