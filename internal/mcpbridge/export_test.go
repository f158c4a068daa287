package mcpbridge

import (
	"fmt"

	"github.com/toolsvc/toolsvc/internal/registry"
)

// SyntheticTools grows b's tool index to n tools for benchmarks, by copying
// the registered tools under new names (tool-0001-query-knowledge, ...):
// the same rendering and visibility work per tool as real ones.
func SyntheticTools(b *Bridge, n int) error {
	cur := b.catalog.Load().tools
	real := cur.latest
	idx := &toolIndex{byName: map[string]*registry.Tool{}}
	errSchema := cur.errSchema
	for i := 0; i < n; i++ {
		t := *real[i%len(real)]
		t.Name = fmt.Sprintf("tool-%04d-%s", i, t.Name)
		r, err := renderTool(&t, errSchema)
		if err != nil {
			return err
		}
		idx.latest = append(idx.latest, &t)
		idx.rendered = append(idx.rendered, r)
		idx.byName[t.Name] = &t
	}
	idx.errSchema = errSchema
	b.replaceTools(idx)
	return nil
}
