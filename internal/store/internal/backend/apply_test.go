package backend_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/internal/backend"
)

func TestFail(t *testing.T) {
	transient := func(err error) bool { return err.Error() == "busy" }
	ctx := context.Background()
	if backend.Fail(ctx, "op", nil, transient) != nil {
		t.Error("nil became an error")
	}
	var ue *store.UnavailableError
	if err := backend.Fail(ctx, "Search", errors.New("busy"), transient); !errors.As(err, &ue) || ue.Op != "Search" {
		t.Errorf("transient: %v, want UnavailableError of Search", err)
	}
	cause := errors.New("syntax")
	if err := backend.Fail(ctx, "Search", cause, transient); !errors.Is(err, cause) || err.Error() != "store: Search: syntax" || errors.As(err, &ue) {
		t.Errorf("other: %v, want it wrapped with the operation", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := backend.Fail(cancelled, "Search", errors.New("busy"), transient); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v, want context.Canceled", err)
	}
}

// fakeTx records what Apply asks of a backend.
type fakeTx struct {
	applied []backend.Applied
	ran     []string
	failRun string
}

func (f *fakeTx) Applied(context.Context) ([]backend.Applied, error) { return f.applied, nil }
func (f *fakeTx) Run(_ context.Context, m backend.Migration) error {
	if m.Name == f.failRun {
		return errors.New("boom")
	}
	f.ran = append(f.ran, m.Name)
	return nil
}
func (f *fakeTx) Record(context.Context, backend.Migration) error { return nil }

func TestApplyRunsWhatIsMissingInOrder(t *testing.T) {
	ms := []backend.Migration{{Version: 1, Name: "0001_a.sql", MinReader: 1}, {Version: 2, Name: "0002_b.sql", MinReader: 1}, {Version: 3, Name: "0003_c.sql", MinReader: 3}}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	fail := func(op string, err error) error { return errors.New(op + ": " + err.Error()) }

	tx := &fakeTx{applied: []backend.Applied{{Version: 1, MinReader: 1}}}
	if err := backend.Apply(context.Background(), tx, ms, log, "test", fail); err != nil {
		t.Fatal(err)
	}
	if strings.Join(tx.ran, ",") != "0002_b.sql,0003_c.sql" || strings.Count(logs.String(), "store migration applied") != 2 {
		t.Errorf("ran %v, logged %q; want 2 and 3 in order, each logged", tx.ran, logs.String())
	}
	tx = &fakeTx{failRun: "0002_b.sql"}
	if err := backend.Apply(context.Background(), tx, ms, log, "test", fail); err == nil || err.Error() != "migrate 0002_b.sql: boom" {
		t.Errorf("a failed script: %v, want it named", err)
	}
	// A later build's contracting migration: this build cannot read the database.
	tx = &fakeTx{applied: []backend.Applied{{Version: 1}, {Version: 2}, {Version: 3}, {Version: 4, MinReader: 4}}}
	if err := backend.Apply(context.Background(), tx, ms, log, "test", fail); err == nil {
		t.Error("a database this build cannot read was migrated")
	}
}
