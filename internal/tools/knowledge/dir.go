package knowledge

import (
	"slices"
	"sync"

	kn "github.com/toolsvc/toolsvc/internal/knowledge"
)

// Source gives the knowledge set the tools answer from.
type Source interface {
	// Set returns the current set; it is never nil.
	Set() *kn.Set
}

// Dir is a knowledge directory loaded into a Set, reloaded on demand (by
// sync-knowledge). It is safe for concurrent use: readers get the last
// loaded set while a reload runs, and reloads run one at a time.
type Dir struct {
	path string

	reload sync.Mutex // serialises Reload

	mu     sync.RWMutex
	set    *kn.Set
	errors []kn.LoadError
}

var _ Source = (*Dir)(nil)

// OpenDir loads the directory at path. Malformed files are kept as
// LoadErrors (see LoadErrors); the error is non-nil only when the
// directory itself cannot be read.
func OpenDir(path string) (*Dir, error) {
	d := &Dir{path: path}
	if _, _, err := d.Reload(); err != nil {
		return nil, err
	}
	return d, nil
}

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

// Set returns the last loaded set.
func (d *Dir) Set() *kn.Set {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.set
}

// LoadErrors returns the files the last load could not use.
func (d *Dir) LoadErrors() []kn.LoadError {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.errors)
}

// Reload reads the directory again and makes the result current. When the
// directory cannot be read the previous set stays current and the error is
// returned.
func (d *Dir) Reload() (*kn.Set, []kn.LoadError, error) {
	d.reload.Lock()
	defer d.reload.Unlock()
	set, errs, err := kn.LoadDir(d.path)
	if err != nil {
		return nil, nil, err
	}
	d.mu.Lock()
	d.set, d.errors = set, errs
	d.mu.Unlock()
	return set, slices.Clone(errs), nil
}
