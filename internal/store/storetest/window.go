package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

// OpenAs opens the one database of a SchemaWindow test as a build that
// knows the backend's embedded migrations plus later: a later release
// (later empty: this build).
type OpenAs func(t *testing.T, later []backend.Migration) (store.Store, error)

// SchemaWindow checks the rolling-upgrade rule on one database: release
// N (this build) and N+1 (this build plus an expanding migration, whose
// min-reader is N) run side by side, each reading what the other wrote,
// and N opens it again after N+1 migrated it (a replica of the old release
// restarting mid-rollout); once N+2 applies a contracting migration
// (min-reader N+2), N refuses to open it and says which build it needs.
// newest is the backend's newest embedded migration (N); expand and
// contract are the SQL of the two later migrations.
func SchemaWindow(t *testing.T, open OpenAs, newest int, expand, contract string) {
	n := newest
	releaseN, err := open(t, nil)
	if err != nil {
		t.Fatalf("release N: %v", err)
	}
	defer func() { _ = releaseN.Close() }()
	expanding := backend.Migration{Version: n + 1, Name: fmt.Sprintf("%04d_expand.sql", n+1), SQL: expand, MinReader: n}
	releaseN1, err := open(t, []backend.Migration{expanding})
	if err != nil {
		t.Fatalf("release N+1 migrating the database: %v", err)
	}
	defer func() { _ = releaseN1.Close() }()
	restarted, err := open(t, nil)
	if err != nil {
		t.Fatalf("release N restarting after N+1 migrated the database (expand only): %v, want it to open", err)
	}
	defer func() { _ = restarted.Close() }()

	ctx := t.Context()
	tenant := "window"
	for i, s := range []store.Store{releaseN, releaseN1, restarted} {
		if err := s.AppendAudit(ctx, &store.AuditEvent{Tenant: tenant, Tool: fmt.Sprintf("tool-%d", i), Decision: store.DecisionAllow}); err != nil {
			t.Fatalf("write through release %d: %v", i, err)
		}
	}
	for i, s := range []store.Store{releaseN, releaseN1, restarted} {
		got, _, err := s.ListAudit(ctx, store.AuditFilter{Tenant: tenant, Limit: 10})
		if err != nil || len(got) != 3 {
			t.Fatalf("read through release %d: %d events, %v; want the 3 both releases wrote", i, len(got), err)
		}
	}

	contracting := backend.Migration{Version: n + 2, Name: fmt.Sprintf("%04d_contract.sql", n+2), SQL: contract, MinReader: n + 2}
	releaseN2, err := open(t, []backend.Migration{expanding, contracting})
	if err != nil {
		t.Fatalf("release N+2 migrating the database: %v", err)
	}
	_ = releaseN2.Close()
	s, err := open(t, nil)
	if err == nil {
		_ = s.Close()
		t.Fatal("release N opened a database past its window (a contracting migration of N+2)")
	}
	for _, want := range []string{fmt.Sprintf("migration %d", n+2), fmt.Sprintf("knows migration %d", n+2), fmt.Sprintf("knows up to %d", n)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	// N+1 still opens it? No: N+2's contraction needs N+2.
	if s, err := open(t, []backend.Migration{expanding}); err == nil {
		_ = s.Close()
		t.Error("release N+1 opened a database N+2 contracted")
	}
}
