package auth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolsvc/toolsvc/internal/auth"
)

func keyEntry(key, subject, tenant string, perms ...string) auth.APIKeyConfig {
	return auth.APIKeyConfig{KeySHA256: auth.HashKey(key), Subject: subject, Tenant: tenant, Permissions: perms}
}

// TestReloadSwapsThePolicy: after Reload a removed key is refused, a kept
// one still authenticates, the subscribers hear of it, and Admits judges
// principals authenticated before the swap by the new policy.
func TestReloadSwapsThePolicy(t *testing.T) {
	ctx := context.Background()
	a, err := auth.New(ctx, &auth.Config{APIKeys: []auth.APIKeyConfig{
		keyEntry("tsk_alice_0123456789", "alice", "acme", "memory:*"),
		keyEntry("tsk_bob_0123456789", "bob", "acme", "memory:read", "memory:write"),
		keyEntry("tsk_carol_0123456789", "carol", "acme", "*"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	alice, _ := a.Authenticate(ctx, "Bearer tsk_alice_0123456789")
	bob, _ := a.Authenticate(ctx, "Bearer tsk_bob_0123456789")
	carol, _ := a.Authenticate(ctx, "Bearer tsk_carol_0123456789")
	swaps := 0
	a.OnSwap(func() { swaps++ })
	next := &auth.Config{APIKeys: []auth.APIKeyConfig{
		keyEntry("tsk_alice_0123456789", "alice", "acme", "memory:*"),
		keyEntry("tsk_bob_0123456789", "bob", "acme", "memory:read"), // lowered
	}}
	if err := a.Reload(ctx, next); err != nil {
		t.Fatal(err)
	}
	if swaps != 1 || a.Config() != next {
		t.Fatalf("swaps %d, config in force %p (want %p)", swaps, a.Config(), next)
	}
	if _, err := a.Authenticate(ctx, "Bearer tsk_carol_0123456789"); err == nil {
		t.Fatal("a removed key still authenticates")
	}
	if p, err := a.Authenticate(ctx, "Bearer tsk_bob_0123456789"); err != nil || p.Allows("memory:write") {
		t.Fatalf("bob after the reload: %+v %v", p, err)
	}
	for _, tc := range []struct {
		name string
		p    *auth.Principal
		want bool
	}{{"unchanged", alice, true}, {"permission lowered", bob, false}, {"key removed", carol, false}} {
		if got := a.Admits(tc.p); got != tc.want {
			t.Errorf("%s: Admits = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReloadRefusesABadConfigWhole: a config with any problem leaves the
// policy in force untouched.
func TestReloadRefusesABadConfigWhole(t *testing.T) {
	ctx := context.Background()
	a, err := auth.New(ctx, &auth.Config{APIKeys: []auth.APIKeyConfig{keyEntry("tsk_alice_0123456789", "alice", "acme", "*")}})
	if err != nil {
		t.Fatal(err)
	}
	bad := &auth.Config{APIKeys: []auth.APIKeyConfig{
		keyEntry("tsk_dave_0123456789", "dave", "acme", "*"),
		{KeySHA256: auth.HashKey("tsk_eve_0123456789"), Subject: "eve"}, // no tenant
	}}
	var ce *auth.ConfigError
	if err := a.Reload(ctx, bad); !errors.As(err, &ce) || !strings.Contains(err.Error(), "tenant is required") {
		t.Fatalf("Reload(bad) = %v", err)
	}
	if _, err := a.Authenticate(ctx, "Bearer tsk_alice_0123456789"); err != nil {
		t.Fatalf("the running policy was lost: %v", err)
	}
	if _, err := a.Authenticate(ctx, "Bearer tsk_dave_0123456789"); err == nil {
		t.Fatal("part of a bad config was put in force")
	}
}

// TestReloadUnderConcurrentCalls: authentications racing a stream of
// swaps each see one whole policy (run with -race).
func TestReloadUnderConcurrentCalls(t *testing.T) {
	ctx := context.Background()
	cfg := func(perm string) *auth.Config {
		return &auth.Config{APIKeys: []auth.APIKeyConfig{keyEntry("tsk_alice_0123456789", "alice", "acme", perm)}}
	}
	a, err := auth.New(ctx, cfg("memory:read"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p, err := a.Authenticate(ctx, "Bearer tsk_alice_0123456789")
				if err != nil || len(p.Permissions) != 1 {
					t.Errorf("mid-swap: %+v %v", p, err)
					return
				}
			}
		}()
	}
	for i := range 200 {
		if err := a.Reload(ctx, cfg([]string{"memory:read", "memory:write"}[i%2])); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestBudgetsSection: the budgets section loads, and every mistake in it
// names its line and field.
func TestBudgetsSection(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "auth.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keys := "api_keys:\n  - key: tsk_alice_0123456789\n    subject: alice\n    tenant: acme\n    permissions: [\"*\"]\n"
	cfg, err := auth.LoadFile(write(keys + "budgets:\n  default_cost: 2\n  limits:\n    - {name: daily, per: tenant, units: 10000, window: 24h}\n    - {name: team-hourly, per: team, match: blue, units: 50, window: 1h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b := cfg.Budgets; len(b.Limits) != 2 || b.Limits[0].Units != 10000 || b.Limits[0].Window.Hours() != 24 || b.Cost(nil) != 2 {
		t.Fatalf("loaded %+v", b)
	}
	one := 0.2
	if got := cfg.Budgets.Cost(&one); got != 1 {
		t.Fatalf("Cost(0.2) = %d, want 1 (rounded up)", got)
	}
	_, err = auth.LoadFile(write(keys + "budgets:\n  default_cost: -1\n  limits:\n    - {name: daily, per: planet, units: 0, window: 10ms}\n    - {name: daily, per: tenant, units: 5, window: 1h}\n"))
	for _, want := range []string{"budgets: default_cost must be", "budgets.limits[0]: per must be tenant, team or key", "budgets.limits[0]: units must be at least 1",
		"budgets.limits[0]: window must be between", "budgets.limits[1]: name \"daily\" is already budgets.limits[0]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nlacks %q", err, want)
		}
	}
	if _, err = auth.LoadFile(write(keys + "budgets:\n  limits:\n    - {name: x, per: key, units: 5, window: 1h, extra: 1}\n")); err == nil ||
		!strings.Contains(err.Error(), "line 8: budgets.limits[0]: unknown key \"extra\"") {
		t.Errorf("unknown key: %v", err)
	}
}

// TestAdmitsRefusesANarrowedToolSetBinding: a session of a key that a
// reload binds to a tool set, or to fewer sets, no longer stands; one whose
// binding is unchanged does.
func TestAdmitsRefusesANarrowedToolSetBinding(t *testing.T) {
	ctx := context.Background()
	sets := []auth.ToolSetConfig{
		{Name: "read", Include: []auth.ToolSelector{{Tool: "search-*"}}},
		{Name: "write", Include: []auth.ToolSelector{{Tool: "add-*"}}},
	}
	bound := func(key, subject string, ts ...string) auth.APIKeyConfig {
		k := keyEntry(key, subject, "acme", "memory:*")
		k.ToolSets = ts
		return k
	}
	a, err := auth.New(ctx, &auth.Config{ToolSets: sets, APIKeys: []auth.APIKeyConfig{
		bound("tsk_free_0123456789", "free"),
		bound("tsk_both_0123456789", "both", "read", "write"),
		bound("tsk_same_0123456789", "same", "read"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	free, _ := a.Authenticate(ctx, "Bearer tsk_free_0123456789")
	both, _ := a.Authenticate(ctx, "Bearer tsk_both_0123456789")
	same, _ := a.Authenticate(ctx, "Bearer tsk_same_0123456789")
	if err := a.Reload(ctx, &auth.Config{ToolSets: sets, APIKeys: []auth.APIKeyConfig{
		bound("tsk_free_0123456789", "free", "read"),
		bound("tsk_both_0123456789", "both", "read"),
		bound("tsk_same_0123456789", "same", "read"),
	}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    *auth.Principal
		want bool
	}{{"binding added", free, false}, {"binding narrowed", both, false}, {"binding unchanged", same, true}} {
		if got := a.Admits(tc.p); got != tc.want {
			t.Errorf("%s: Admits = %v, want %v", tc.name, got, tc.want)
		}
	}
}
