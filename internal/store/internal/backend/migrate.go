package backend

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one versioned schema change.
type Migration struct {
	// Version orders migrations; it is the file name's numeric prefix.
	Version int
	// Name is the file name.
	Name string
	// SQL is the file's content, run as one script.
	SQL string
}

// LoadMigrations reads the *.sql files of dir in fsys, named
// "NNNN_description.sql", ordered by version. Duplicate or malformed
// versions are an error: they are a build defect, not a runtime condition.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("store: read migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %q: name must be NNNN_description.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("store: read migration %q: %w", e.Name(), err)
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("store: migrations %q and %q share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// CheckNotNewer returns an error if the database has a migration newer
// than any this build has: it was migrated by a later toolsvc, whose
// schema this one would read and write wrongly (a later migration may
// add triggers that call functions this build does not register).
func CheckNotNewer(migrations []Migration, applied []int) error {
	known := 0
	if len(migrations) > 0 {
		known = migrations[len(migrations)-1].Version
	}
	if newest := slices.Max(append([]int{0}, applied...)); newest > known {
		return fmt.Errorf("store: the database has schema migration %d, newer than this toolsvc's newest (%d): "+
			"it was opened by a later version; run that version or a newer one", newest, known)
	}
	return nil
}
