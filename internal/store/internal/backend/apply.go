package backend

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/toolsvc/toolsvc/internal/store"
)

// MigrationTx is a backend's migration transaction: what differs between
// the backends (their SQL dialect and driver) in running migrations.
type MigrationTx interface {
	// Applied creates schema_migrations (with its min_reader column) if
	// need be and returns the migrations it records.
	Applied(ctx context.Context) ([]Applied, error)
	// Run runs one migration's script.
	Run(ctx context.Context, m Migration) error
	// Record records m as applied.
	Record(ctx context.Context, m Migration) error
}

// Apply runs, in one transaction the caller commits, the migrations the
// database lacks, in order, after checking that this build can read the
// database (CheckReadable); a later build's migration within the window is
// logged and left alone. fail maps driver errors to the store's (Fail).
func Apply(ctx context.Context, tx MigrationTx, migrations []Migration, log *slog.Logger, backendName string,
	fail func(op string, err error) error) error {
	applied, err := tx.Applied(ctx)
	if err != nil {
		return fail("open", err)
	}
	done := make(map[int]bool, len(applied))
	for _, a := range applied {
		done[a.Version] = true
	}
	unknown, err := CheckReadable(migrations, applied)
	if err != nil {
		return err
	}
	for _, a := range unknown {
		log.WarnContext(ctx, "store: the database has a migration of a later toolsvc, within this one's window (expand): running beside it",
			"backend", backendName, "migration", a.Version, "min_reader", a.MinReader)
	}
	for _, m := range migrations {
		if done[m.Version] {
			continue
		}
		if err := tx.Run(ctx, m); err != nil {
			return fail("migrate "+m.Name, err)
		}
		if err := tx.Record(ctx, m); err != nil {
			return fail("open", err)
		}
		log.InfoContext(ctx, "store migration applied", "backend", backendName, "migration", m.Name)
	}
	return nil
}

// Fail turns a driver error into the store's error vocabulary: context
// errors stay matchable with errors.Is, conditions transient reports
// become store.UnavailableError, everything else is wrapped with the
// operation. nil stays nil.
func Fail(ctx context.Context, op string, err error, transient func(error) bool) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("store: %s: %w", op, ctxErr)
	}
	if transient(err) {
		return &store.UnavailableError{Op: op, Err: err}
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
