package layering

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// citation matches a comment that cites a requirement by a document a
// clone does not have (the seed documents, by number) or by an issue number.
// Comments cite the repository's own docs (docs/*.md) instead.
var citation = regexp.MustCompile(`(?i)\bseeds?[- ]00[0-4]\b|\bissues? [0-9]+`)

// TestCommentsCiteRepositoryDocs fails on a comment line of a Go or proto
// file (outside generated code) that cites a seed document or an issue
// number.
func TestCommentsCiteRepositoryDocs(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == "gen" || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, ".proto") {
			return nil
		}
		n++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(text, "//") && citation.MatchString(text) {
				t.Errorf("%s:%d: comment cites a seed document or an issue number; cite docs/*.md in words: %s", rel, line, text)
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("walked only %d .go and .proto files from %s: wrong root?", n, root)
	}
}
