package kb

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// fileStamp is what a load read of one file: enough to tell later whether
// the file on disk is still the one loaded.
type fileStamp struct {
	read    bool
	size    int64
	modTime time.Time
	sum     [sha256.Size]byte
}

func stampOf(info fs.FileInfo, data []byte) fileStamp {
	return fileStamp{read: true, size: int64(len(data)), modTime: info.ModTime(), sum: sha256.Sum256(data)}
}

// Kinds of a FileChange.
const (
	FileAdded    = "added"
	FileModified = "modified"
	FileRemoved  = "removed"
)

// FileChange is a knowledge file that changed on disk since the library
// was loaded.
type FileChange struct {
	// Path is relative to the knowledge directory, slash-separated, as
	// Item.Path.
	Path string
	// Change is FileAdded, FileModified or FileRemoved.
	Change string
}

// Digest identifies the whole library's content: the digests of every
// tenant's set, of the set of a tenant without a directory, and of the
// development set. Replicas that loaded one digest serve the same
// knowledge.
func (l *Library) Digest() string { return l.digest }

func (l *Library) digestSets() string {
	h := sha256.New()
	for _, t := range l.Tenants() {
		writeField(h, t)
		writeField(h, l.byTenant[t].Digest())
	}
	writeField(h, "\x00empty")
	writeField(h, l.empty.Digest())
	if l.dev != nil {
		writeField(h, "\x00dev")
		writeField(h, l.dev.Digest())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// PendingChanges returns the knowledge files of tenant that changed on
// disk since the library was loaded (added, modified or removed), sorted
// by path: what the next sync would pick up. A tenant's files are those
// under tenants/<tenant>/, and company-wide/ when it is published; in the
// single-tenant layout and in development mode, every file. A file whose
// modification time moved but whose content did not is unchanged. The
// error is non-nil only when the directory cannot be read.
func (l *Library) PendingChanges(tenant string) ([]FileChange, error) {
	mine := func(p string) bool {
		if l.layout != LayoutTenants || l.dev != nil {
			return true
		}
		return strings.HasPrefix(p, TenantsDir+"/"+tenant+"/") || (l.companyWide && strings.HasPrefix(p, CompanyWideDir+"/"))
	}
	roots := []string{"."}
	if l.layout == LayoutTenants {
		roots = []string{CompanyWideDir, TenantsDir}
	}
	seen := map[string]bool{}
	var out []FileChange
	fsys := os.DirFS(l.root)
	for _, root := range roots {
		err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil && p == root && errors.Is(err, fs.ErrNotExist) && root != ".":
				return fs.SkipDir // an optional directory
			case err != nil && p == root:
				return err
			case err != nil:
				return nil // unreadable now: the next sync reports it
			case p != root && strings.HasPrefix(d.Name(), "."):
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			case d.IsDir():
				// The tenants layout reads files of tenants/<t>/ only.
				if l.layout == LayoutTenants && path.Dir(p) == TenantsDir && !mine(p+"/") {
					return fs.SkipDir
				}
				return nil
			case path.Ext(p) != ".md" || !mine(p):
				return nil
			case l.layout == LayoutTenants && path.Dir(p) == TenantsDir:
				return nil // a file directly under tenants/ is not served
			}
			seen[p] = true
			old, loaded := l.stamps[p]
			if !loaded {
				out = append(out, FileChange{Path: p, Change: FileAdded})
				return nil
			}
			if changed(fsys, p, old) {
				out = append(out, FileChange{Path: p, Change: FileModified})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for p := range l.stamps {
		if !seen[p] && mine(p) {
			out = append(out, FileChange{Path: p, Change: FileRemoved})
		}
	}
	slices.SortFunc(out, func(a, b FileChange) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// changed reports whether the file at p differs from what was loaded: a
// file of the same size and modification time is taken as the same (as
// make and rsync do); otherwise its content decides.
func changed(fsys fs.FS, p string, old fileStamp) bool {
	info, err := fs.Stat(fsys, p)
	if err != nil || !info.Mode().IsRegular() {
		return true
	}
	if info.Size() == old.size && info.ModTime().Equal(old.modTime) {
		return false
	}
	data, err := readLimited(fsys, p)
	if err != nil {
		return true
	}
	return sha256.Sum256(data) != old.sum
}

// digestItems hashes what of each item reaches a caller (see Set.Digest).
func digestItems(items []*Item) string {
	h := sha256.New()
	for _, it := range items {
		md, _ := json.Marshal(it.Metadata) // map keys are sorted
		for _, f := range []string{it.ID, it.Path, it.Tenant, it.Owner, it.Author, it.Hash, it.Supersedes,
			it.CreatedAt.UTC().Format(time.RFC3339Nano), it.UpdatedAt.UTC().Format(time.RFC3339Nano), string(md)} {
			writeField(h, f)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeField(h interface{ Write([]byte) (int, error) }, f string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(f)))
	_, _ = h.Write(n[:])
	_, _ = h.Write([]byte(f))
}
