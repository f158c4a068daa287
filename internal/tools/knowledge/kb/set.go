package kb

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
)

// Set is an immutable collection of knowledge items with unique ids. It is
// safe for concurrent use; the Items it returns are shared and must not be
// modified.
type Set struct {
	items []*Item // sorted by id
	byID  map[string]*Item
	terms map[*Item]itemTerms // search index for Query
	// digest identifies the set's content (see Digest).
	digest string
}

// Digest identifies the set's content: the hex SHA-256 of every item's
// id, path, tenant, owner, author, dates, metadata and content hash, in
// id order. Two sets with one digest answer every query alike, so it
// versions results computed from the set (the result cache's keys).
func (s *Set) Digest() string { return s.digest }

// LoadDir loads every "*.md" file under dir, recursively, skipping hidden
// files and directories (names starting with "."). A file that cannot be read
// or parsed, or that repeats an id, becomes a LoadError and loading goes on;
// the error result is non-nil only when dir itself cannot be read. Items
// without "created" or "updated" dates get the file's modification time.
func LoadDir(dir string) (*Set, []LoadError, error) {
	items, errs, err := loadItems(dir, "", nil)
	if err != nil {
		return nil, nil, err
	}
	set, dupErrs := newSet(items)
	errs = append(errs, dupErrs...)
	slices.SortStableFunc(errs, func(a, b LoadError) int { return strings.Compare(a.Path, b.Path) })
	return set, errs, nil
}

// loadItems parses every knowledge file under dir as LoadDir describes,
// with prefix ("tenants/acme/") before every Path. When stamps is not nil
// it records every file read, by Path, for PendingChanges.
func loadItems(dir, prefix string, stamps map[string]fileStamp) ([]*Item, []LoadError, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("knowledge: %w", err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("knowledge: %s is not a directory", dir)
	}
	fsys := os.DirFS(dir)
	var (
		items []*Item
		errs  []LoadError
	)
	walkErr := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			errs = append(errs, LoadError{Path: prefix + p, Reason: "cannot read: " + fsReason(err)})
			return nil
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || path.Ext(p) != ".md" {
			return nil
		}
		it, lerr, stamp := loadFile(fsys, p)
		if stamps != nil && stamp.read {
			stamps[prefix+p] = stamp
		}
		if lerr != nil {
			lerr.Path = prefix + lerr.Path
			errs = append(errs, *lerr)
			return nil
		}
		if it != nil {
			it.Path = prefix + it.Path
			items = append(items, it)
		}
		return nil
	})
	if walkErr != nil {
		return nil, nil, fmt.Errorf("knowledge: reading %s: %w", dir, walkErr)
	}
	return items, errs, nil
}

// loadFile reads and parses one file, and stamps what it read. It returns
// nil, nil for a symbolic link to a directory, which is not a knowledge
// file.
func loadFile(fsys fs.FS, p string) (*Item, *LoadError, fileStamp) {
	info, err := fs.Stat(fsys, p)
	if err != nil {
		return nil, &LoadError{Path: p, Reason: "cannot read: " + fsReason(err)}, fileStamp{}
	}
	if info.IsDir() {
		return nil, nil, fileStamp{}
	}
	if !info.Mode().IsRegular() {
		// A device or pipe could be read forever.
		return nil, &LoadError{Path: p, Reason: "not a regular file"}, fileStamp{}
	}
	data, err := readLimited(fsys, p)
	if err != nil {
		return nil, &LoadError{Path: p, Reason: err.Error()}, fileStamp{}
	}
	stamp := stampOf(info, data)
	it, err := Parse(p, data)
	if err != nil {
		var le *LoadError
		if !errors.As(err, &le) {
			le = &LoadError{Path: p, Reason: err.Error()}
		}
		return nil, le, stamp
	}
	mtime := info.ModTime().UTC()
	if it.CreatedAt.IsZero() {
		it.CreatedAt = mtime
	}
	if it.UpdatedAt.IsZero() {
		it.UpdatedAt = mtime
	}
	return it, nil, stamp
}

// readLimited reads at most MaxFileSize bytes, since a file can grow
// between Stat and Open.
func readLimited(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %s", fsReason(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read: %s", fsReason(err))
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("file is larger than %d bytes", MaxFileSize)
	}
	return data, nil
}

// fsReason drops the path an fs.PathError repeats, since LoadError has it.
func fsReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// NewSet builds a Set from items, for callers that hold items from another
// source than a directory. Each item is copied, validated and compiled as
// Parse would; an invalid item or a repeated id becomes a LoadError (the
// first item with an id wins) and the rest are kept. SupersededBy is
// recomputed from the items' Supersedes.
func NewSet(items []*Item) (*Set, []LoadError) {
	var (
		ok   []*Item
		errs []LoadError
	)
	for i, it := range items {
		if it == nil {
			errs = append(errs, LoadError{Path: fmt.Sprintf("items[%d]", i), Reason: "nil item"})
			continue
		}
		c := cloneItem(it)
		if reason, valid := prepare(c); !valid {
			errs = append(errs, LoadError{Path: c.Path, Reason: reason})
			continue
		}
		ok = append(ok, c)
	}
	set, dupErrs := newSet(ok)
	return set, append(errs, dupErrs...)
}

// newSet indexes items that were already validated and are owned by the set.
func newSet(items []*Item) (*Set, []LoadError) {
	s := &Set{byID: make(map[string]*Item, len(items)), terms: make(map[*Item]itemTerms, len(items))}
	var errs []LoadError
	for _, it := range items {
		if first, dup := s.byID[it.ID]; dup {
			errs = append(errs, LoadError{
				Path:   it.Path,
				Reason: fmt.Sprintf("duplicate id %q (first defined in %s)", it.ID, first.Path),
			})
			continue
		}
		it.SupersededBy = nil
		s.byID[it.ID] = it
		s.items = append(s.items, it)
	}
	slices.SortFunc(s.items, func(a, b *Item) int { return cmp.Compare(a.ID, b.ID) })
	// Items are visited in id order, so every SupersededBy comes out sorted.
	for _, it := range s.items {
		if old, found := s.byID[it.Supersedes]; found && it.Supersedes != "" {
			old.SupersededBy = append(old.SupersededBy, it.ID)
		}
	}
	for _, it := range s.items {
		s.terms[it] = indexItem(it)
	}
	s.digest = digestItems(s.items)
	return s, errs
}

func cloneItem(it *Item) *Item {
	c := *it
	c.Tags = slices.Clone(it.Tags)
	c.SupersededBy = nil
	c.Metadata = maps.Clone(it.Metadata)
	c.Constraints = slices.Clone(it.Constraints)
	for i := range c.Constraints {
		c.Constraints[i].AppliesTo = slices.Clone(c.Constraints[i].AppliesTo)
	}
	c.rules = nil
	return &c
}

// Get returns the item with the given id.
func (s *Set) Get(id string) (*Item, bool) {
	it, ok := s.byID[id]
	return it, ok
}

// GetVisible returns the item with the given id if v sees it: an item v
// does not see is as absent as one that does not exist.
func (s *Set) GetVisible(id string, v *Viewer) (*Item, bool) {
	it, ok := s.byID[id]
	if !ok || !v.Sees(it) {
		return nil, false
	}
	return it, true
}

// SupersededByFor returns the ids of it.SupersededBy that v sees, so that
// an item never names a successor its reader may not know of.
func (s *Set) SupersededByFor(it *Item, v *Viewer) []string {
	var out []string
	for _, id := range it.SupersededBy {
		if by, ok := s.byID[id]; ok && v.Sees(by) {
			out = append(out, id)
		}
	}
	return out
}

// Visible returns the items v sees, sorted by id.
func (s *Set) Visible(v *Viewer) []*Item {
	var out []*Item
	for _, it := range s.items {
		if v.Sees(it) {
			out = append(out, it)
		}
	}
	return out
}

// All returns every item, sorted by id. The slice is the caller's; the items
// are shared.
func (s *Set) All() []*Item {
	return slices.Clone(s.items)
}

// Len returns the number of items.
func (s *Set) Len() int {
	return len(s.items)
}
