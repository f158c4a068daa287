package knowledge

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge/kb"
)

// Source gives the knowledge the tools answer from.
type Source interface {
	// Library returns the current library; it is never nil.
	Library() *kb.Library
}

// Dir is a knowledge directory loaded into a Library, reloaded on demand
// (by sync-knowledge) and, once Share is called, whenever another replica
// of the same database publishes a newer knowledge set. It is the one
// place the knowledge set is loaded. It is safe for concurrent use:
// readers get the last loaded library while a reload runs, and reloads
// run one at a time; a reload that fails leaves the last good library
// current.
type Dir struct {
	path string
	opts kb.LibraryOptions

	reload sync.Mutex // serialises loads
	mu     sync.RWMutex
	lib    *kb.Library
	errors []kb.LoadError
	state  ReplicaState

	// Set by Share.
	versions store.KnowledgeVersionStore
	nudge    Nudge
	logger   *slog.Logger
}

// ReplicaState is what a replica knows of the knowledge set it serves.
type ReplicaState struct {
	// Version is the shared knowledge set version this replica loaded (or
	// published); 0 without a shared version (a single process, or before
	// the first publish).
	Version int64
	// Digest identifies the content of the library served
	// (kb.Library.Digest).
	Digest string
	// LoadedAt is when the library served was loaded.
	LoadedAt time.Time
	// ReloadError is why the last reload failed, empty when it did not:
	// the replica still serves the library of LoadedAt. Operator-facing.
	ReloadError string
	// ReloadErrorAt is when that reload failed.
	ReloadErrorAt time.Time
}

var _ Source = (*Dir)(nil)

// OpenDir loads the directory at path with opts (see kb.LoadLibrary).
// Malformed files are kept as LoadErrors (see LoadErrors); the error is
// non-nil only when the directory cannot be read or its layout does not
// fit the deployment.
func OpenDir(path string, opts kb.LibraryOptions) (*Dir, error) {
	d := &Dir{path: path, opts: opts, logger: slog.New(slog.DiscardHandler)}
	if _, _, err := d.load(0); err != nil {
		return nil, err
	}
	return d, nil
}

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

// Library returns the last loaded library.
func (d *Dir) Library() *kb.Library {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.lib
}

// State returns what this replica knows of the set it serves.
func (d *Dir) State() ReplicaState {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.state
}

// LoadErrors returns the files the last load could not use, of every
// tenant: for the operator's log, never for a caller.
func (d *Dir) LoadErrors() []kb.LoadError {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.errors)
}

// Reload reads the directory again and makes the result current; once
// shared (Share), it then publishes the set's digest as the deployment's
// knowledge version and nudges the other replicas, which reload too. When
// the directory cannot be read the previous library stays current and the
// error is returned. A failed publish is logged and kept in State: this
// replica serves the new set, the others keep theirs until the next
// publish.
func (d *Dir) Reload(ctx context.Context) (*kb.Library, []kb.LoadError, error) {
	d.reload.Lock()
	defer d.reload.Unlock()
	lib, errs, err := d.loadLocked(d.State().Version)
	if err != nil || d.versions == nil {
		return lib, errs, err
	}
	v, perr := d.versions.PublishKnowledge(ctx, lib.Digest())
	if perr != nil {
		d.logger.WarnContext(ctx, "knowledge set not published to the other replicas", slog.String("error", perr.Error()))
		d.setError("the knowledge set was loaded here but could not be published to the other replicas: the store failed")
		return lib, errs, nil
	}
	d.mu.Lock()
	d.state.Version = v.Version
	d.mu.Unlock()
	if d.nudge != nil {
		if nerr := d.nudge.Notify(ctx, v.Version); nerr != nil {
			d.logger.WarnContext(ctx, "other replicas not nudged; they notice the new knowledge set when they poll",
				slog.Int64("version", v.Version), slog.String("error", nerr.Error()))
		}
	}
	return lib, errs, nil
}

func (d *Dir) load(version int64) (*kb.Library, []kb.LoadError, error) {
	d.reload.Lock()
	defer d.reload.Unlock()
	return d.loadLocked(version)
}

// loadLocked loads the directory and makes it current as version; the
// caller holds d.reload.
func (d *Dir) loadLocked(version int64) (*kb.Library, []kb.LoadError, error) {
	lib, errs, err := kb.LoadLibrary(d.path, d.opts)
	if err != nil {
		// The cause names paths: the log has it, callers get the fact.
		d.setError("the knowledge directory could not be read (the server log has the cause)")
		return nil, nil, err
	}
	d.mu.Lock()
	d.lib, d.errors = lib, errs
	d.state = ReplicaState{Version: version, Digest: lib.Digest(), LoadedAt: time.Now().UTC()}
	d.mu.Unlock()
	return lib, slices.Clone(errs), nil
}

func (d *Dir) setError(msg string) {
	d.mu.Lock()
	d.state.ReloadError, d.state.ReloadErrorAt = msg, time.Now().UTC()
	d.mu.Unlock()
}

// Pin returns ctx holding the library current now, and the digest of
// tenant's set in it: the tools answer a call with ctx from that library
// even if a reload lands meanwhile, so a result cached under the digest
// was computed from that very set. It is the knowledge service's
// registry.Service.DataVersion.
func (d *Dir) Pin(ctx context.Context, tenant string) (context.Context, string) {
	lib := d.Library()
	return context.WithValue(ctx, pinnedKey{}, lib), lib.For(tenant).Digest()
}

type pinnedKey struct{}

// pinned returns the library Pin put in ctx, or nil.
func pinned(ctx context.Context) *kb.Library {
	lib, _ := ctx.Value(pinnedKey{}).(*kb.Library)
	return lib
}
