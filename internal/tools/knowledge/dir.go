package knowledge

import (
	"slices"
	"sync"

	kn "github.com/toolsvc/toolsvc/internal/knowledge"
)

// Source gives the knowledge the tools answer from.
type Source interface {
	// Library returns the current library; it is never nil.
	Library() *kn.Library
}

// Dir is a knowledge directory loaded into a Library, reloaded on demand
// (by sync-knowledge). It is the one place the knowledge set is loaded. It
// is safe for concurrent use: readers get the last loaded library while a
// reload runs, and reloads run one at a time.
type Dir struct {
	path string
	opts kn.LibraryOptions

	reload sync.Mutex // serialises Reload
	mu     sync.RWMutex
	lib    *kn.Library
	errors []kn.LoadError
}

var _ Source = (*Dir)(nil)

// OpenDir loads the directory at path with opts (see knowledge.LoadLibrary).
// Malformed files are kept as LoadErrors (see LoadErrors); the error is
// non-nil only when the directory cannot be read or its layout does not
// fit the deployment.
func OpenDir(path string, opts kn.LibraryOptions) (*Dir, error) {
	d := &Dir{path: path, opts: opts}
	if _, _, err := d.Reload(); err != nil {
		return nil, err
	}
	return d, nil
}

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

// Library returns the last loaded library.
func (d *Dir) Library() *kn.Library {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.lib
}

// LoadErrors returns the files the last load could not use, of every
// tenant: for the operator's log, never for a caller.
func (d *Dir) LoadErrors() []kn.LoadError {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.errors)
}

// Reload reads the directory again and makes the result current. When the
// directory cannot be read the previous library stays current and the
// error is returned.
func (d *Dir) Reload() (*kn.Library, []kn.LoadError, error) {
	d.reload.Lock()
	defer d.reload.Unlock()
	lib, errs, err := kn.LoadLibrary(d.path, d.opts)
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	d.lib, d.errors = lib, errs
	d.mu.Unlock()
	return lib, slices.Clone(errs), nil
}
