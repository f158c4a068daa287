package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// cmdReembed embeds every memory that has no vector of the configured
// model: after a model change, or to fill vectors ahead of a start. It
// takes the serve flags (--db, --embeddings-url or --embeddings-model-dir,
// --config, TOOLSVC_* variables), prints progress, and can be interrupted
// and run again: it resumes where it stopped. A running service fills the
// same vectors in the background; this command does it at once.
func cmdReembed(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f := newServerFlags("reembed", stderr)
	if err := f.parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "toolsvc reembed: %v\n", err)
		return 2
	}
	logger := newLogger(&f.cfg, stderr)
	emb, err := server.Embedder(&f.cfg, logger)
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc reembed: %v\n", err)
		return 1
	}
	if emb == nil {
		fmt.Fprintln(stderr, "toolsvc reembed: no embeddings provider: set --embeddings-url or --embeddings-model-dir")
		return 2
	}
	st, err := backends.Open(ctx, f.cfg.DB, store.WithLogger(logger))
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc reembed: %v\n", err)
		return 1
	}
	defer func() { _ = st.Close() }()
	svc := memory.New(st, memory.WithEmbedder(emb), memory.WithLogger(logger))
	start, last := time.Now(), time.Time{}
	p, err := svc.Reembed(ctx, func(p memory.Progress) {
		if time.Since(last) >= time.Second || p.Done == p.Total {
			last = time.Now()
			fmt.Fprintf(stdout, "reembed %s: %d of %d memories have a vector\n", p.Model, p.Done, p.Total)
		}
	})
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc reembed: stopped at %d of %d: %v (run it again to resume)\n", p.Done, p.Total, err)
		return 1
	}
	fmt.Fprintf(stdout, "reembed %s: done, %d of %d memories have a vector (%s)\n", p.Model, p.Done, p.Total, time.Since(start).Round(time.Millisecond))
	return 0
}
