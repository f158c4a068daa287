package mcpbridge

import (
	"strings"
	"sync"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// maxPages bounds the rendered pages kept: beyond it a page is rendered
// for its request and not kept.
const maxPages = 1024

// pageMemo keeps the rendered result of tools/list pages by their content
// (the tools ToolService listed, in order, and the next cursor), so that a
// listing is the write of shared bytes rather than a copy of every tool's
// description. It decides nothing: what a caller sees is ToolService's
// answer through the chain; the memo only spares rendering it again.
type pageMemo struct {
	mu    sync.RWMutex
	pages map[string][]byte
}

func newPageMemo() *pageMemo { return &pageMemo{pages: map[string][]byte{}} }

// page returns the rendered result of a ListTools page. The bytes are
// shared: callers must not modify them.
func (m *pageMemo) page(idx *toolIndex, resp *toolsvcv1.ListToolsResponse) ([]byte, error) {
	var key strings.Builder
	for _, d := range resp.GetTools() {
		key.WriteString(d.GetName())
		key.WriteByte('\n')
	}
	key.WriteByte(0)
	key.WriteString(resp.GetNextPageToken())
	k := key.String()
	m.mu.RLock()
	body, ok := m.pages[k]
	m.mu.RUnlock()
	if ok {
		return body, nil
	}
	body, err := idx.renderPage(resp)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if len(m.pages) < maxPages {
		m.pages[k] = body
	}
	m.mu.Unlock()
	return body, nil
}
