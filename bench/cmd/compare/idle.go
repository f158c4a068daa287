package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/bench/internal/toolsvc"
)

// idleRuns is how many fresh processes the resident set is the median
// of; startupRuns how many the start-up time is the median of (the
// machine's speed wavers more than a start-up lasts).
const (
	idleRuns    = 3
	startupRuns = 7
)

// idleSettle is how long a started server rests before its resident set is
// read: long enough for start-up's goroutines to finish and the store's
// checkpointer to tick.
const idleSettle = 3 * time.Second

// idleFootprint is toolsvc at rest on its embedded default: how long
// `toolsvc serve` takes from exec to a ready /readyz, and what it holds
// resident once settled, split into anonymous memory (heap, stacks) and
// file-backed pages (mostly the binary's own code and read-only data,
// which the kernel shares and can drop under pressure).
type idleFootprint struct {
	Runs      int     `json:"runs"`
	StartupMs float64 `json:"startupMs"`
	// StartupRuns is how many starts StartupMs is the median of, and
	// StartupMinMs their fastest.
	StartupRuns  int     `json:"startupRuns"`
	StartupMinMs float64 `json:"startupMinMs"`
	RSSMiB       float64 `json:"rssMiB"`
	AnonMiB      float64 `json:"anonMiB"`
	FileMiB      float64 `json:"fileMiB"`
	BinaryMiB    float64 `json:"binaryMiB"`
	GoalRSSMiB   float64 `json:"goalRssMiB"`
	// GoalStartupMs is the start-up target.
	GoalStartupMs float64 `json:"goalStartupMs"`
}

// idle starts a fresh `toolsvc serve` idleRuns times on a new SQLite file
// with the example knowledge and no auth file (the README's `make run`),
// and keeps the median of each figure.
func (m *measurer) idle(ctx context.Context) (*idleFootprint, error) {
	var startup, rss, anon, file []float64
	// Start-up is timed on an existing database (as a restart finds
	// it): a first start creates it and is not counted.
	db := filepath.Join(m.tmp, "idle.db")
	first, err := toolsvc.Start(ctx, toolsvc.Options{Binary: m.bin, DB: db, KnowledgeDir: filepath.Join(m.repo, "examples", "knowledge")})
	if err != nil {
		return nil, err
	}
	first.Stop()
	for i := range startupRuns {
		t0 := time.Now()
		p, err := toolsvc.Start(ctx, toolsvc.Options{Binary: m.bin, DB: db, KnowledgeDir: filepath.Join(m.repo, "examples", "knowledge")})
		if err != nil {
			return nil, err
		}
		startup = append(startup, float64(time.Since(t0).Microseconds())/1000)
		if i >= idleRuns {
			p.Stop()
			continue
		}
		time.Sleep(idleSettle)
		status := fmt.Sprintf("/proc/%d/status", p.PID())
		rss = append(rss, kibToMiB(procField(status, "VmRSS")))
		anon = append(anon, kibToMiB(procField(status, "RssAnon")))
		file = append(file, kibToMiB(procField(status, "RssFile")))
		p.Stop()
	}
	f := &idleFootprint{Runs: idleRuns, StartupRuns: startupRuns, StartupMs: median(startup), StartupMinMs: slices.Min(startup), RSSMiB: median(rss), AnonMiB: median(anon), FileMiB: median(file), GoalRSSMiB: 40, GoalStartupMs: 150}
	if st, err := fileSize(m.bin); err == nil {
		f.BinaryMiB = float64(st) / (1 << 20)
	}
	return f, nil
}

// kibToMiB parses a /proc status value such as "51234 kB".
func kibToMiB(v string) float64 {
	n, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 64)
	return n / 1024
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// writeIdle renders the idle section of the report.
func writeIdle(p func(string, ...any), f *idleFootprint) {
	p("\n## Idle footprint\n\n`toolsvc serve` on its embedded default (an existing SQLite file, the example knowledge, development mode), ")
	p("started %d times. Start-up is exec to the first 200 from `/readyz` (polled every %s), the median of the %d starts (fastest %.0f ms); ", starts(f), toolsvc.ReadyPoll, starts(f), f.StartupMinMs)
	p("the resident set is read from `/proc/<pid>/status` %s after ready, the median of the first %d.\n\n", idleSettle, f.Runs)
	p("| start-up ms | goal start-up | RSS MiB | anonymous MiB | file-backed MiB | binary MiB | goal RSS |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	p("| %.0f | ≤ %.0f ms: %s | %.1f | %.1f | %.1f | %.1f | ≤ %.0f MiB: %s |\n\n", f.StartupMs, f.GoalStartupMs, verdict(f.StartupMs <= f.GoalStartupMs),
		f.RSSMiB, f.AnonMiB, f.FileMiB, f.BinaryMiB, f.GoalRSSMiB, verdict(f.RSSMiB <= f.GoalRSSMiB))
	p("Anonymous memory is the heap and stacks: the registry, derived schemas, compiled validation rules and knowledge set ")
	p("(about 5 MiB live after start-up; `serve` returns start-up's garbage to the OS before it listens, `debug.FreeOSMemory`). ")
	p("File-backed pages are the binary's own code and read-only data in use: `serve` unmaps the ones start-up touched before it listens ")
	p("(`madvise(MADV_DONTNEED)` on the executable's read-only mappings), and those serving uses come back from the page cache. ")
	p("The kernel shares them between processes and reclaims them under memory pressure, so they are the part of the figure ")
	p("that does not cost a machine memory of its own.\n")
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// verdict is a target's word in the report.
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// starts is the number of starts of f (as many as Runs in results written
// before StartupRuns was recorded).
func starts(f *idleFootprint) int { return max(f.StartupRuns, f.Runs) }
