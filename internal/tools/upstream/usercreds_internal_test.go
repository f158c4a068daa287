package upstream

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
)

type memCreds struct {
	mu sync.Mutex
	m  map[string]store.UserCredential
}

func (m *memCreds) PutUserCredential(_ context.Context, c *store.UserCredential) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[c.Tenant+"/"+c.Subject+"/"+c.Upstream] = *c
	return nil
}

func (m *memCreds) UserCredential(_ context.Context, tenant, subject, upstream string) (*store.UserCredential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.m[tenant+"/"+subject+"/"+upstream]
	if !ok {
		return nil, store.ErrNotFound
	}
	return &c, nil
}

func (m *memCreds) DeleteUserCredential(_ context.Context, tenant, subject, upstream string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.m[tenant+"/"+subject+"/"+upstream]
	delete(m.m, tenant+"/"+subject+"/"+upstream)
	return ok, nil
}

// TestCredentialKeyRotation: a credential sealed with the old key opens
// once a new key seals (the old one still given), not once the old key is
// retired; a sealed credential moved to another caller does not open.
func TestCredentialKeyRotation(t *testing.T) {
	const k1, k2 = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", "k2:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8="
	st := &memCreds{m: map[string]store.UserCredential{}}
	ctx := t.Context()
	old, err := NewCredentials(st, []string{k1})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Put(ctx, "acme", "alice", "github", "ghp_alice"); err != nil {
		t.Fatal(err)
	}
	rotated, err := NewCredentials(st, []string{k2, k1})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.open(ctx, "acme", "alice", "github"); err != nil || got != "ghp_alice" {
		t.Fatalf("after rotation = %q, %v; want the stored credential", got, err)
	}
	_ = rotated.Put(ctx, "acme", "bob", "github", "ghp_bob")
	if c, _ := st.UserCredential(ctx, "acme", "bob", "github"); c.KeyID != "k2" {
		t.Errorf("a new credential is sealed with %s, want the first key k2", c.KeyID)
	}
	retired, _ := NewCredentials(st, []string{k2})
	if _, err := retired.open(ctx, "acme", "alice", "github"); !errors.Is(err, errNoCredential) {
		t.Errorf("with k1 retired: %v, want errNoCredential (store it again)", err)
	}
	moved, _ := st.UserCredential(ctx, "acme", "bob", "github")
	moved.Subject = "mallory"
	_ = st.PutUserCredential(ctx, moved)
	if _, err := rotated.open(ctx, "acme", "mallory", "github"); !errors.Is(err, errNoCredential) {
		t.Errorf("a credential copied to another caller opened: %v", err)
	}
	for _, bad := range [][]string{{}, {"nokey"}, {"k:short"}, {k1, k1}} {
		if _, err := NewCredentials(st, bad); err == nil {
			t.Errorf("keys %v accepted", bad)
		}
	}
}
