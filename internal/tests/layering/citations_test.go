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
// clone does not have (the seed documents by number, in the singular or
// the plural, hyphenated or as "seed documents" followed by the number:
// TestCitationPattern lists the forms) or by an issue number. Comments
// cite the repository's own docs (docs/*.md) instead.
var citation = regexp.MustCompile(`(?i)\bseeds?(?:[- ]+|\s+(?:documents?|docs?)\s+)0\d\d\b|\bissues? #?[0-9]+`)

// commentMarkers are the line-comment markers of the files the test reads,
// by suffix (or whole name).
var commentMarkers = map[string]string{
	".go": "//", ".proto": "//", ".mjs": "//", ".js": "//", ".ts": "//",
	".sql": "--", ".yaml": "#", ".yml": "#", ".sh": "#", "Makefile": "#",
}

// commentMarker is the line-comment marker of the file at rel, or "".
func commentMarker(rel string) string {
	if m, ok := commentMarkers[filepath.Base(rel)]; ok {
		return m
	}
	return commentMarkers[filepath.Ext(rel)]
}

// commentText is the comment on a line: the whole line after marker when
// the line is a comment, else what follows " marker " after code (a
// trailing comment), else "".
func commentText(line, marker string) (string, bool) {
	line = strings.TrimSpace(line)
	if rest, ok := strings.CutPrefix(line, marker); ok {
		return rest, true
	}
	if i := strings.Index(line, " "+marker+" "); i >= 0 {
		return line[i+len(marker)+2:], true
	}
	return "", false
}

// TestCitationPattern pins what the citation pattern catches and what it
// leaves alone.
func TestCitationPattern(t *testing.T) {
	for _, tc := range []struct {
		text string
		cite bool
	}{
		{"as seed 001 requires", true},
		{"seeds 000 and 001 say so", true},
		{"Seeds 002, 003", true},
		{"the seed-002 envelope", true},
		{"seed documents 004", true},
		{"see issue 43", true},
		{"issues 4 and 7", true},
		{"a random seed 42 for the fuzzer", false},
		{"seeds a fresh store", false},
		{"adr-001 supersedes", false},
		{"docs/REST.md, Errors", false},
	} {
		if got := citation.MatchString(tc.text); got != tc.cite {
			t.Errorf("%q: cites %v, want %v", tc.text, got, tc.cite)
		}
	}
}

// TestCommentsCiteRepositoryDocs fails on a comment (a comment line or a
// trailing comment) of a source, SQL, YAML or script file (outside
// generated code and node_modules) that cites a seed document or an issue
// number, also when the citation is split over two comment lines ("seed"
// ending one, "001" starting the next).
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
		marker := commentMarker(rel)
		if marker == "" {
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
		prev := "" // the previous line's comment, for citations split over two
		for line := 1; sc.Scan(); line++ {
			text, ok := commentText(sc.Text(), marker)
			switch {
			case !ok:
				prev = ""
				continue
			case citation.MatchString(text):
				t.Errorf("%s:%d: comment cites a seed document or an issue number; cite docs/*.md in words: %s", rel, line, strings.TrimSpace(text))
			case prev != "" && !citation.MatchString(prev) && citation.MatchString(prev+" "+text):
				t.Errorf("%s:%d: comment (with the line before) cites a seed document or an issue number; cite docs/*.md in words: %s / %s", rel, line, strings.TrimSpace(prev), strings.TrimSpace(text))
			}
			prev = text
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("walked only %d source files from %s: wrong root?", n, root)
	}
}
