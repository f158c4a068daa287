package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
)

// Memory corpus: 12-24 words per memory from a Zipf-distributed vocabulary
// of 5,000 synthetic words, spread over the caller's user (u0) and project
// (p0) layers, the company layer, and other users the caller cannot see.
const vocab = 5000

func word(rank int) string {
	const cons, vows = "bcdfgklmnprstvz", "aeiou"
	var b strings.Builder
	for n := rank + len(cons)*len(vows); n > 0; n /= len(cons) * len(vows) {
		d := n % (len(cons) * len(vows))
		b.WriteByte(cons[d/len(vows)])
		b.WriteByte(vows[d%len(vows)])
	}
	b.WriteByte('x')
	return b.String()
}

// seedMemories adds n memories of tenant to the store at dsn through the
// store's own bulk API, in batches of one transaction each; offset (the
// memories already there) varies the random stream between increments.
func seedMemories(ctx context.Context, dsn, tenant string, n, offset int) (err error) {
	st, err := backends.Open(ctx, dsn)
	if err != nil {
		return err
	}
	// The seeded rows are only safe once the store closed cleanly.
	defer func() { err = errors.Join(err, st.Close()) }()
	bulk, ok := st.(store.MemoryBulkAdder)
	if !ok {
		return fmt.Errorf("store %s cannot bulk-add", st.Backend())
	}
	r := rand.New(rand.NewPCG(1, uint64(offset)))
	zipf := rand.NewZipf(r, 1.07, 2, vocab-1)
	batch := make([]*store.Memory, 0, 5000)
	for i := range n {
		ws := make([]string, 12+r.IntN(13))
		for j := range ws {
			ws[j] = word(int(zipf.Uint64()))
		}
		layer, scope := store.LayerUser, fmt.Sprint("u", r.IntN(10))
		switch r.IntN(4) {
		case 0:
			layer, scope = store.LayerProject, fmt.Sprint("p", r.IntN(5))
		case 1:
			layer, scope = store.LayerCompany, tenant
		}
		batch = append(batch, &store.Memory{Tenant: tenant, Layer: layer, ScopeID: scope,
			Content: strings.Join(ws, " "), Tags: []string{fmt.Sprint("tag", r.IntN(20))}, SourceType: store.SourceImport})
		if len(batch) == cap(batch) || i == n-1 {
			if err := bulk.AddMemories(ctx, batch); err != nil {
				return fmt.Errorf("seed %d/%d: %w", offset+i+1, offset+n, err)
			}
			batch = batch[:0]
		}
	}
	return nil
}

// searchArgs returns n distinct search-memories arguments of two words of
// middling frequency, so that nearly every call misses the result cache
// and reaches the store.
func searchArgs(n int) []json.RawMessage {
	r := rand.New(rand.NewPCG(7, 7))
	out := make([]json.RawMessage, n)
	for i := range out {
		q := word(20+r.IntN(1000)) + " " + word(20+r.IntN(1000))
		out[i], _ = json.Marshal(map[string]any{"query": q, "limit": 10})
	}
	return out
}

// writeKnowledge writes files knowledge items with perFile constraints each
// into dir: half forbid a dependency, half forbid a code pattern in Go files.
func writeKnowledge(dir string, files, perFile int) error {
	if err := os.MkdirAll(filepath.Join(dir, "policies"), 0o755); err != nil {
		return err
	}
	for f := range files {
		var b strings.Builder
		fmt.Fprintf(&b, "---\nid: pol-bench-%04d\ntype: policy\nlayer: company\ntitle: Bench policy %d\nsummary: Synthetic policy %d for the check-knowledge benchmark\nstatus: accepted\nseverity: warn\ntags: [bench]\nconstraints:\n", f, f, f)
		for c := range perFile {
			if c%2 == 0 {
				fmt.Fprintf(&b, "  - operator: must_not_use\n    target: dependency\n    pattern: \"^forbidden-%d-%d$\"\n    severity: warn\n    message: Do not depend on forbidden-%d-%d.\n", f, c, f, c)
			} else {
				fmt.Fprintf(&b, "  - operator: must_not_match\n    target: code\n    pattern: 'BANNED_%d_%d\\('\n    appliesTo: [\"**/*.go\"]\n    severity: warn\n    message: Do not call BANNED_%d_%d.\n", f, c, f, c)
			}
		}
		fmt.Fprintf(&b, "---\n\n# Bench policy %d\n\nSynthetic.\n", f)
		if err := os.WriteFile(filepath.Join(dir, "policies", fmt.Sprintf("pol-bench-%04d.md", f)), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// checkArgs is a check-knowledge call with 20 dependencies and 5 Go files
// of about 2 KiB, one of which violates a constraint.
func checkArgs() json.RawMessage {
	var deps []map[string]string
	for i := range 20 {
		deps = append(deps, map[string]string{"name": fmt.Sprintf("lib-%d", i), "version": "1.0.0"})
	}
	deps = append(deps, map[string]string{"name": "forbidden-3-0", "version": "1.0.0"})
	var files []map[string]string
	for i := range 5 {
		code := "package main\n\nimport \"fmt\"\n\n" + strings.Repeat("func f() { fmt.Sprint(\"x\") }\n", 70)
		if i == 0 {
			code += "func g() { BANNED_7_1() }\n"
		}
		files = append(files, map[string]string{"path": fmt.Sprintf("svc/file%d.go", i), "content": code})
	}
	b, _ := json.Marshal(map[string]any{"dependencies": deps, "files": files})
	return b
}
