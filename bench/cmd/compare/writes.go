package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolsvc/toolsvc/bench/internal/load"
	"github.com/toolsvc/toolsvc/bench/internal/procstat"
	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// The write rows: add-memory through the whole chain over MCP 2026-07-28,
// rotating over writeKeys API keys at writeConcurrency calls in flight, on
// a fresh SQLite store and on a fresh PostgreSQL database, each beside its
// floor measured in the same run: the insert of the same memory row (unique
// by tenant and id) and its full-text entry in one transaction with the
// same durability, and nothing else (no chain, no near-duplicate check, no
// audit, no answer). The SQLite floor runs in this process on the
// writer's pragmas (WAL, synchronous=FULL, one connection), as
// BenchmarkAddMemoryFloor in internal/store/sqlite does; the PostgreSQL
// floor inserts into a table with a GIN-indexed tsvector from a pool of
// writeConcurrency connections, committing each (synchronous_commit on).
const (
	writeTool        = "add-memory"
	writeKeys        = 512
	writeConcurrency = 16
)

// writeRow is one line of the write table.
type writeRow struct {
	Store string `json:"store"`
	// Series names what was measured: "toolsvc add-memory" or "floor".
	Series   string  `json:"series"`
	Writes   int     `json:"writes"`
	Errors   int     `json:"errors"`
	PerSec   float64 `json:"writesPerSecond"`
	P50Ms    float64 `json:"p50Ms"`
	P99Ms    float64 `json:"p99Ms"`
	ServerUs float64 `json:"serverCpuPerWriteUs"`
	// DatabaseUs is the CPU of the PostgreSQL backends serving the
	// series' connections per write (0 on SQLite, where the engine runs in
	// the server's process and its CPU is in ServerUs).
	DatabaseUs float64 `json:"databaseCpuPerWriteUs"`
}

// writeArgs returns n distinct add-memory arguments: 16 words of the
// memory corpus's vocabulary (word) each, uniformly drawn, one tag.
func writeArgs(n int) []json.RawMessage {
	r := rand.New(rand.NewPCG(11, 11))
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i], _ = json.Marshal(map[string]any{"content": writeContent(r), "tags": []string{"bench"}})
	}
	return out
}

func writeContent(r *rand.Rand) string {
	ws := make([]string, 16)
	for j := range ws {
		ws[j] = word(r.IntN(vocab))
	}
	return strings.Join(ws, " ")
}

// writeRows measures the write rows (see writeRow).
func (m *measurer) writeRows(ctx context.Context) ([]writeRow, error) {
	tool, err := toolsvc.Resolve(writeTool)
	if err != nil {
		return nil, err
	}
	args := writeArgs(20000)
	keys := m.keys.Values[:min(writeKeys, len(m.keys.Values))]
	var rows []writeRow
	chain := func(storeName, db string, backends func() (time.Duration, error)) error {
		p, err := m.startToolsvc(ctx, db, "")
		if err != nil {
			return err
		}
		defer p.Stop()
		target, closeTarget, err := tool.Target(toolsvc.MCP2026, toolsvc.Endpoint{HTTPBase: "http://" + p.HTTPAddr, Keys: keys}, args, writeConcurrency)
		if err != nil {
			return err
		}
		defer closeTarget()
		row, err := m.measureWrites(ctx, storeName, "toolsvc "+writeTool, target, p.PID(), backends)
		rows = append(rows, row)
		return err
	}
	floor := func(storeName string, target load.Target, backends func() (time.Duration, error)) error {
		pid := 0
		if backends == nil {
			pid = os.Getpid()
		}
		row, err := m.measureWrites(ctx, storeName, "floor", target, pid, backends)
		rows = append(rows, row)
		return err
	}

	sqFloor, closeFloor, err := sqliteFloor(filepath.Join(m.tmp, "write-floor.db"))
	if err != nil {
		return nil, err
	}
	defer closeFloor()
	if err := chain("sqlite", filepath.Join(m.tmp, "writes.db"), nil); err != nil {
		return rows, err
	}
	if err := floor("sqlite", sqFloor, nil); err != nil {
		return rows, err
	}

	if m.cfg.postgres == "" {
		return rows, nil
	}
	admin, err := pgx.Connect(ctx, m.cfg.postgres)
	if err != nil {
		m.log.Warn("PostgreSQL unavailable; skipping its write rows", "error", err)
		return rows, nil
	}
	defer admin.Close(context.Background())
	dsn, drop, err := scratchDatabase(ctx, m.cfg.postgres)
	if err != nil {
		return rows, err
	}
	defer drop()
	if err := chain("postgres", dsn, func() (time.Duration, error) { return backendCPU(ctx, admin, dsn) }); err != nil {
		return rows, err
	}
	pgFloor, closePG, err := postgresFloor(ctx, dsn)
	if err != nil {
		return rows, err
	}
	defer closePG()
	err = floor("postgres", pgFloor, func() (time.Duration, error) { return backendCPU(ctx, admin, dsn) })
	return rows, err
}

// measureWrites runs target at writeConcurrency after a warm-up of its
// own, charging pid's CPU (0: none) and, with backends, the CPU it reports
// between the start and the end of the measurement.
func (m *measurer) measureWrites(ctx context.Context, storeName, series string, target load.Target, pid int, backends func() (time.Duration, error)) (writeRow, error) {
	row := writeRow{Store: storeName, Series: series}
	m.log.Info("measuring writes", "store", storeName, "series", series, "concurrency", writeConcurrency)
	warm := load.Plan{Concurrency: []int{writeConcurrency}, Duration: m.cfg.warmup + time.Millisecond, Warmup: time.Nanosecond}
	if _, err := load.Run(ctx, target, warm); err != nil {
		return row, err
	}
	var before time.Duration
	if backends != nil {
		var err error
		if before, err = backends(); err != nil {
			return row, err
		}
	}
	plan := load.Plan{Concurrency: []int{writeConcurrency}, Duration: m.cfg.duration, Warmup: time.Nanosecond, PID: pid, Label: "writes"}
	points, err := load.Run(ctx, target, plan)
	if err != nil {
		return row, err
	}
	p := points[0]
	row.Writes, row.Errors, row.PerSec, row.P50Ms, row.P99Ms, row.ServerUs = p.Requests, p.Errors, p.RPS, p.P50Ms, p.P99Ms, p.ServerCPUPerRequestUs
	if backends != nil && p.Requests > 0 {
		after, err := backends()
		if err != nil {
			return row, err
		}
		row.DatabaseUs = float64((after - before).Microseconds()) / float64(p.Requests)
	}
	return row, nil
}

// backendCPU sums the CPU time of the PostgreSQL backends connected to the
// database of dsn (read from /proc: the server runs on this machine, as
// scratchDatabase requires).
func backendCPU(ctx context.Context, admin *pgx.Conn, dsn string) (time.Duration, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return 0, err
	}
	rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, cfg.Database)
	if err != nil {
		return 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, pid := range pids {
		s, err := procstat.Read("/proc", int(pid))
		if err != nil {
			continue // a backend that ended meanwhile
		}
		total += s.CPU
	}
	return total, nil
}

// floorSchema is BenchmarkAddMemoryFloor's: a row unique by tenant and id
// and a contentless FTS5 table of its words.
var floorSchema = []string{
	`CREATE TABLE m (seq INTEGER PRIMARY KEY, tenant TEXT NOT NULL, id TEXT NOT NULL, content TEXT NOT NULL,
		tags TEXT NOT NULL, created_at INTEGER NOT NULL, UNIQUE (tenant, id))`,
	`CREATE VIRTUAL TABLE f USING fts5 (terms, content = '', contentless_delete = 1, detail = none,
		tokenize = 'unicode61 remove_diacritics 0')`,
}

// sqliteFloor returns the SQLite floor's target on a new file at path.
func sqliteFloor(path string) (load.Target, func(), error) {
	db, err := sql.Open("sqlite", sqlite.WriterDSN(path))
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	for _, q := range floorSchema {
		if _, err := db.Exec(q); err != nil {
			_ = db.Close()
			return nil, nil, err
		}
	}
	ins, err := db.Prepare(`INSERT INTO m (tenant, id, content, tags, created_at) VALUES (?, ?, ?, ?, ?) RETURNING seq`)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	fts, err := db.Prepare(`INSERT INTO f (rowid, terms) VALUES (?, ?)`)
	if err != nil {
		_ = db.Close()
		return nil, nil, err
	}
	var n atomic.Int64
	target := load.TargetFunc(func(ctx context.Context, worker int) string {
		i := n.Add(1)
		content := writeContent(rand.New(rand.NewPCG(uint64(i), 11)))
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return "begin"
		}
		defer func() { _ = tx.Rollback() }()
		var seq int64
		if err := tx.StmtContext(ctx, ins).QueryRowContext(ctx, "bench", fmt.Sprint("mem_", i), content, `["bench"]`, time.Now().UnixMicro()).Scan(&seq); err != nil {
			return "insert"
		}
		if _, err := tx.StmtContext(ctx, fts).ExecContext(ctx, seq, content); err != nil {
			return "fts"
		}
		if err := tx.Commit(); err != nil {
			return "commit"
		}
		return ""
	})
	return target, func() { _ = db.Close() }, nil
}

// postgresFloor returns the PostgreSQL floor's target on the database of
// dsn: the row and its GIN-indexed tsvector in one committed INSERT.
func postgresFloor(ctx context.Context, dsn string) (load.Target, func(), error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, nil, err
	}
	cfg.MaxConns = writeConcurrency
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	for _, q := range []string{
		`CREATE TABLE floor_m (seq bigserial PRIMARY KEY, tenant text NOT NULL, id text NOT NULL, content text NOT NULL,
			tags jsonb NOT NULL, created_at timestamptz NOT NULL, terms tsvector NOT NULL, UNIQUE (tenant, id))`,
		`CREATE INDEX floor_m_terms ON floor_m USING gin (terms)`,
	} {
		if _, err := pool.Exec(ctx, q); err != nil {
			pool.Close()
			return nil, nil, err
		}
	}
	var n atomic.Int64
	target := load.TargetFunc(func(ctx context.Context, worker int) string {
		i := n.Add(1)
		content := writeContent(rand.New(rand.NewPCG(uint64(i), 11)))
		if _, err := pool.Exec(ctx, `INSERT INTO floor_m (tenant, id, content, tags, created_at, terms)
			VALUES ($1, $2, $3, '["bench"]', now(), to_tsvector('english', $3))`, "bench", fmt.Sprint("mem_", i), content); err != nil {
			return "insert"
		}
		return ""
	})
	return target, pool.Close, nil
}

// writeTable renders the write rows as Markdown, each store's floor beside
// its toolsvc row.
func writeTable(w io.Writer, rows []writeRow) {
	fmt.Fprintf(w, "| store | series | writes | errors | writes/s | p50 ms | p99 ms | server CPU µs/write | database CPU µs/write | ÷ floor |\n")
	fmt.Fprintf(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	floors := map[string]float64{}
	for _, r := range rows {
		if r.Series == "floor" {
			floors[r.Store] = r.ServerUs + r.DatabaseUs
		}
	}
	for _, r := range rows {
		ratio := "–"
		if f := floors[r.Store]; f > 0 && r.Series != "floor" {
			ratio = fmt.Sprintf("%.1f×", (r.ServerUs+r.DatabaseUs)/f)
		}
		db := "–"
		if r.Store == "postgres" {
			db = fmt.Sprintf("%.0f", r.DatabaseUs)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.0f | %.2f | %.2f | %.0f | %s | %s |\n",
			r.Store, r.Series, r.Writes, r.Errors, r.PerSec, r.P50Ms, r.P99Ms, r.ServerUs, db, ratio)
	}
}

// onlyWrites is --only's value for the write rows.
const onlyWrites = "writes"

// onlyWrites measures the write rows alone: it prints their table and
// writes them to <out>/writes.json, leaving the report as it is.
func (m *measurer) onlyWrites(ctx context.Context, start time.Time) error {
	rows, err := m.writeRows(ctx)
	if len(rows) > 0 {
		out := filepath.Join(inRepo(m.repo, m.cfg.outDir), "writes.json")
		if werr := writeFile(out, func(w io.Writer) error {
			return json.NewEncoder(w).Encode(map[string]any{"startedAt": start.UTC(), "machine": describeMachine(), "rows": rows})
		}); werr != nil && err == nil {
			err = werr
		}
		writeTable(os.Stdout, rows)
	}
	m.log.Info("done", "elapsed", time.Since(start).Round(time.Second))
	return err
}
