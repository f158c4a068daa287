package backend

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestCheckReadable(t *testing.T) {
	known := []Migration{{Version: 1, MinReader: 1}, {Version: 2, MinReader: 2}, {Version: 5, MinReader: 5}}
	for _, c := range []struct {
		name    string
		applied []Applied
		ok      bool
		unknown int
	}{
		{"empty", nil, true, 0},
		{"older", []Applied{{1, 1}, {2, 2}}, true, 0},
		{"same", []Applied{{1, 1}, {2, 2}, {5, 5}}, true, 0},
		{"same, recorded before min-reader", []Applied{{1, 0}, {2, 0}, {5, 0}}, true, 0},
		{"next expands", []Applied{{1, 1}, {2, 2}, {5, 5}, {6, 5}}, true, 1},
		{"next two expand", []Applied{{5, 5}, {6, 5}, {7, 5}}, true, 2},
		{"next contracts", []Applied{{5, 5}, {6, 6}}, false, 0},
		{"next contracts what this one wrote", []Applied{{5, 5}, {6, 5}, {7, 6}}, false, 0},
		{"unknown, no min-reader", []Applied{{7, 0}}, false, 0},
	} {
		unknown, err := CheckReadable(known, c.applied)
		if (err == nil) != c.ok || len(unknown) != c.unknown {
			t.Errorf("%s: unknown %v, err %v; want ok %v, %d unknown", c.name, unknown, err, c.ok, c.unknown)
		}
		if err != nil && !strings.Contains(err.Error(), "knows up to 5") {
			t.Errorf("%s: %v does not say what this build knows", c.name, err)
		}
	}
	if _, err := CheckReadable(nil, []Applied{{1, 0}}); err == nil {
		t.Error("a build without migrations accepted a migrated database")
	}
}

func TestLoadMigrationsReadsMinReader(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0001_a.sql": {Data: []byte("CREATE TABLE a (x int);")},
		"m/0002_b.sql": {Data: []byte("-- Adds b.\n-- min-reader: 1\nCREATE TABLE b (x int);")},
		"m/0003_c.sql": {Data: []byte("-- Drops a.\nDROP TABLE a;\n-- min-reader: 1\n")},
	}
	ms, err := LoadMigrations(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{ms[0].MinReader, ms[1].MinReader, ms[2].MinReader}; got[0] != 1 || got[1] != 1 || got[2] != 3 {
		t.Fatalf("min-readers %v, want [1 1 3] (the line counts only in the opening comment)", got)
	}
	for name, body := range map[string]string{
		"above its own version": "-- min-reader: 3\nSELECT 1;",
		"not a number":          "-- min-reader: soon\nSELECT 1;",
	} {
		bad := fstest.MapFS{"m/0001_a.sql": {Data: []byte("SELECT 1;")}, "m/0002_b.sql": {Data: []byte(body)}}
		if _, err := LoadMigrations(bad, "m"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	narrowing := fstest.MapFS{"m/0001_a.sql": {Data: []byte("SELECT 1;")}, "m/0002_b.sql": {Data: []byte("SELECT 1;")},
		"m/0003_c.sql": {Data: []byte("-- min-reader: 1\nSELECT 1;")}}
	if _, err := LoadMigrations(narrowing, "m"); err == nil {
		t.Error("a min-reader below the previous migration's was accepted")
	}
}
