package knowledge

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/periodic"
	"github.com/toolsvc/toolsvc/internal/store"
)

// Nudge carries "a new knowledge set was published" between replicas
// faster than polling the store: Redis pub/sub when Redis is configured.
// It is only ever a hint; the store's version decides.
type Nudge interface {
	// Notify tells the other replicas that version was published.
	Notify(ctx context.Context, version int64) error
	// Listen calls heard for every notification until ctx ends; it
	// returns when ctx ends (or the nudge cannot listen at all).
	Listen(ctx context.Context, heard func())
}

// Share makes the directory one replica of a deployment: Reload publishes
// the loaded set's digest as the shared version in versions, and nudges
// the others through nudge (nil: they find out by polling). It reads the
// version current now as the one this replica loaded: the directory was
// loaded after it was published. Call it once, before serving.
func (d *Dir) Share(ctx context.Context, versions store.KnowledgeVersionStore, nudge Nudge, logger *slog.Logger) error {
	v, err := versions.KnowledgeVersion(ctx)
	if err != nil {
		return err
	}
	d.reload.Lock()
	defer d.reload.Unlock()
	d.versions, d.nudge = versions, nudge
	if logger != nil {
		d.logger = logger
	}
	d.mu.Lock()
	d.state.Version = v.Version
	d.mu.Unlock()
	return nil
}

// Refresh reloads the directory when the shared version is newer than the
// one this replica serves, and reports whether it did. A reload that fails
// keeps the last good library (State says why) and is tried again on the
// next Refresh.
func (d *Dir) Refresh(ctx context.Context) (bool, error) {
	if d.versions == nil {
		return false, nil
	}
	v, err := d.versions.KnowledgeVersion(ctx)
	if err != nil {
		return false, err
	}
	d.reload.Lock()
	defer d.reload.Unlock()
	had := d.State()
	if v.Version <= had.Version {
		return false, nil
	}
	if v.Digest == had.Digest && had.ReloadError == "" {
		// The set published is the one served: nothing to load.
		d.mu.Lock()
		d.state.Version = v.Version
		d.mu.Unlock()
		return false, nil
	}
	lib, _, err := d.loadLocked(had.Version)
	if err != nil {
		d.logger.ErrorContext(ctx, "knowledge set not reloaded: still serving the last good one",
			slog.Int64("version", v.Version), slog.Int64("serving", had.Version), slog.String("error", err.Error()))
		return false, err
	}
	d.mu.Lock()
	d.state.Version = v.Version
	d.mu.Unlock()
	attrs := []any{slog.Int64("version", v.Version), slog.Int64("was", had.Version)}
	if lib.Digest() != v.Digest {
		// The directory changed again since that version was published:
		// the next sync publishes what is on disk now.
		attrs = append(attrs, slog.Bool("newer_on_disk", true))
	}
	d.logger.InfoContext(ctx, "knowledge set reloaded: another replica published a newer one", attrs...)
	return true, nil
}

// Watch keeps the replica's knowledge set current until ctx ends: it
// refreshes on every nudge and, as the fallback, every poll. Errors are
// logged (and kept in State) and never stop it.
func (d *Dir) Watch(ctx context.Context, poll time.Duration) {
	wake := make(chan struct{}, 1)
	if d.nudge != nil {
		listening := make(chan struct{})
		defer func() { <-listening }()
		go func() {
			defer close(listening)
			d.nudge.Listen(ctx, func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			})
		}()
	}
	periodic.Run(ctx, poll, func(ctx context.Context) {
		if _, err := d.Refresh(ctx); err != nil && ctx.Err() == nil {
			d.logger.WarnContext(ctx, "knowledge version not checked", slog.String("error", err.Error()))
		}
	}, periodic.Wake(wake))
}
