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
	// MinReader is the oldest migration a build must know to use the
	// database once this migration is applied: the file's
	// "-- min-reader: NNNN" line, or its own Version without one. A
	// contracting change (a drop, a rename, a tightened constraint, a
	// trigger calling a function only newer builds register) keeps the
	// default; an expanding one (a new table, index, or nullable column)
	// names the migration before it, or that one's MinReader, so that the
	// previous release keeps running beside this one during a rolling
	// upgrade (docs/RELIABILITY.md, "Schema changes").
	MinReader int
}

// Applied is a migration recorded in a database's schema_migrations.
type Applied struct {
	Version int
	// MinReader is the recorded min-reader version; 0 when the build that
	// applied it recorded none (its own Version is assumed).
	MinReader int
}

// minReaderPrefix starts the header line declaring a migration's
// MinReader.
const minReaderPrefix = "-- min-reader:"

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
		m := Migration{Version: v, Name: e.Name(), SQL: string(b), MinReader: v}
		if m.MinReader, err = minReader(m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("store: migrations %q and %q share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
		if out[i].MinReader < out[i-1].MinReader {
			return nil, fmt.Errorf("store: migration %q: min-reader %d is below %q's %d: a window never widens back",
				out[i].Name, out[i].MinReader, out[i-1].Name, out[i-1].MinReader)
		}
	}
	return out, nil
}

// minReader reads the "-- min-reader: NNNN" line among the comment lines
// that open m's SQL; without one it is m.Version.
func minReader(m Migration) (int, error) {
	for _, line := range strings.Split(m.SQL, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "--") {
			break
		}
		rest, ok := strings.CutPrefix(line, minReaderPrefix)
		if !ok {
			continue
		}
		v, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil || v <= 0 || v > m.Version {
			return 0, fmt.Errorf("store: migration %q: %q: want a migration version from 1 to %d", m.Name, line, m.Version)
		}
		return v, nil
	}
	return m.Version, nil
}

// CheckReadable returns an error unless this build (which knows
// migrations) can use a database with the applied migrations: every
// applied migration's min-reader must be one this build knows. A database
// a later build migrated with expanding migrations only is accepted (the
// previous release runs beside the next during a rolling upgrade); one
// with a contracting migration is refused, naming the migration and the
// build it needs. It returns the applied migrations this build does not
// know, for the caller to log.
func CheckReadable(migrations []Migration, applied []Applied) (unknown []Applied, err error) {
	known := 0
	if len(migrations) > 0 {
		known = migrations[len(migrations)-1].Version
	}
	slices.SortFunc(applied, func(a, b Applied) int { return a.Version - b.Version })
	for _, a := range applied {
		need := a.MinReader
		if need == 0 {
			need = a.Version
		}
		if a.Version > known {
			unknown = append(unknown, a)
		}
		if need > known {
			return nil, fmt.Errorf("store: the database has schema migration %d, which needs a toolsvc that knows migration %d; "+
				"this toolsvc knows up to %d: it was migrated by a later version past this one's window; run that version or a newer one",
				a.Version, need, known)
		}
	}
	return unknown, nil
}
