package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/model2vec"
)

// TestConvertGloVeCommand converts a small file in the npm package's
// layout and loads the result; an existing --out, or a file of another
// layout, is refused.
func TestConvertGloVeCommand(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "glove.json")
	const src = `{"dimensions":2,"words":["the","team","mobile"],"vectors":{"the":[1,0,1,0],"team":[0,1,1,1],"mobile":[3,4,5,2]}}`
	if err := os.WriteFile(in, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "glove-test")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"convert-glove", "--in", in, "--out", out, "--vocab", "2"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "kept 2 of 3 words, 2 dimensions") {
		t.Errorf("stdout %q", stdout.String())
	}
	m, err := model2vec.Load(out, "")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "glove-test" || m.Dim() != 2 {
		t.Fatalf("model %q dim %d", m.Name(), m.Dim())
	}
	v, err := m.Embed(t.Context(), []string{"mobile"}) // beyond --vocab 2: unknown
	if err != nil || v[0][0] != 0 || v[0][1] != 0 {
		t.Fatalf("mobile = %v, %v; want the zero vector", v, err)
	}

	stderr.Reset()
	if code := run(t.Context(), []string{"convert-glove", "--in", in, "--out", out}, nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "exists") {
		t.Errorf("existing --out: exit %d, %q", code, stderr.String())
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"vectors":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run(t.Context(), []string{"convert-glove", "--in", bad, "--out", filepath.Join(dir, "x")}, nil, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "must come before") {
		t.Errorf("bad layout: exit %d, %q", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Errorf("a failed conversion left %s: %v", filepath.Join(dir, "x"), err)
	}
}
