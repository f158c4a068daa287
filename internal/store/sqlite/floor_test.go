package sqlite_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// BenchmarkAddMemoryFloor is the floor of a durable memory write in
// SQLite: one transaction that inserts a row of the same size, unique by
// tenant and id, and its full-text entry (FTS5, as the store's, without
// the scope terms), committed with the writer's pragmas (WAL,
// synchronous FULL). BenchmarkAddMemory is the store's AddMemory over the
// same content; docs/BENCHMARKS.md ("The write path") compares them.
func BenchmarkAddMemoryFloor(b *testing.B) {
	path := filepath.Join(b.TempDir(), "floor.db")
	db, err := sql.Open("sqlite", sqlite.WriterDSN(path))
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE TABLE m (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, id TEXT NOT NULL, content TEXT NOT NULL,
			tags TEXT NOT NULL, created_at INTEGER NOT NULL, UNIQUE (tenant, id))`,
		`CREATE VIRTUAL TABLE f USING fts5 (terms, content = '', contentless_delete = 1, detail = none,
			tokenize = 'unicode61 remove_diacritics 0')`,
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	ins, err := db.Prepare(`INSERT INTO m (tenant, id, content, tags, created_at) VALUES (?, ?, ?, ?, ?) RETURNING seq`)
	if err != nil {
		b.Fatal(err)
	}
	fts, err := db.Prepare(`INSERT INTO f (rowid, terms) VALUES (?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		words := make([]string, 16)
		for j := range words {
			words[j] = fmt.Sprint("w", r.IntN(5000))
		}
		content := strings.Join(words, " ")
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		var seq int64
		if err := tx.Stmt(ins).QueryRow("bench", fmt.Sprint("mem_", i), content, `["tag1","tag2"]`, i).Scan(&seq); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Stmt(fts).Exec(seq, content); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
