package main

import (
	"bytes"
	"context"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsvc/toolsvc/bench/internal/drivers"
	"github.com/toolsvc/toolsvc/bench/internal/load"
	"github.com/toolsvc/toolsvc/bench/internal/mcpcheck"
	"github.com/toolsvc/toolsvc/bench/internal/synthetic"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// toolsListKind is the child mode serving the MCP bridge over a synthetic
// registry: "toolslist-<n>".
const toolsListKind = "toolslist-"

// serveToolsList runs the product's MCP bridge (its real tool rendering,
// visibility filtering, paging and list cache) over a registry of n
// synthetic tools on a loopback port, and prints the address.
func serveToolsList(ctx context.Context, n int) error {
	r, err := synthetic.Registry(n)
	if err != nil {
		return err
	}
	ch, err := synthetic.Channel(r)
	if err != nil {
		return err
	}
	b, err := mcpbridge.New(mcpbridge.Config{Registry: r, Channel: ch, Auth: auth.NewDevelopment(), PageSize: toolsListPage})
	if err != nil {
		return err
	}
	defer b.Close()
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", b)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(lis) }()
	defer func() { _ = hs.Close() }()
	fmt.Fprintln(os.Stdout, lis.Addr().String())
	<-ctx.Done()
	return nil
}

// toolsListScale measures tools/list (first page, as a client starts) on
// bridges with growing registries, each in its own process.
func (m *measurer) toolsListScale(ctx context.Context, r *results) error {
	sizes, err := toolsListBytes(ctx, m.cfg.toolsListSizes)
	if err != nil {
		return err
	}
	r.ToolsListBytes = sizes
	for _, n := range m.cfg.toolsListSizes {
		p, err := startBaseline(toolsListKind+strconv.Itoa(n), "")
		if err != nil {
			return err
		}
		client := drivers.NewHTTPClient(maxOf(m.cfg.concurrency))
		d, err := newListTarget(client, "http://"+p.addr+"/mcp", n)
		if err != nil {
			p.stop()
			return err
		}
		s, err := m.sweep(ctx, fmt.Sprintf("tools/list %d tools", n), "mcp-stateful", "tools/list", d,
			m.plan("tools/list", p.cmd.Process.Pid, m.cfg.concurrency, m.cfg.duration), "{}")
		client.CloseIdleConnections()
		p.stop()
		if err != nil {
			return err
		}
		r.ToolsList = append(r.ToolsList, s)
	}
	return nil
}

// toolsListPage is the page size of the measured bridge (its default).
const toolsListPage = 100

// listTarget asks for the first page of tools/list as an MCP client with a
// session per worker. It checks each answer cheaply (mcpcheck.ListCheck:
// HTTP 200, a JSON-RPC result, the page's number of tools and its
// nextCursor) instead of decoding a page of over a megabyte: the client
// shares the machine with the server, and its decoding would be measured
// as the server's latency.
type listTarget struct {
	client *http.Client
	url    string
	check  *mcpcheck.ListCheck
	// workers holds a *listWorker per worker number.
	workers sync.Map
	id      atomic.Int64
}

// listWorker is one worker's session and response buffer.
type listWorker struct {
	session string
	buf     bytes.Buffer
}

func newListTarget(client *http.Client, url string, tools int) (*listTarget, error) {
	if err := drivers.CheckLoopback(url); err != nil {
		return nil, err
	}
	check := &mcpcheck.ListCheck{Tools: min(tools, toolsListPage), More: tools > toolsListPage}
	return &listTarget{client: client, url: url, check: check}, nil
}

// Call implements load.Target.
func (t *listTarget) Call(ctx context.Context, worker int) string {
	v, _ := t.workers.Load(worker)
	w, _ := v.(*listWorker)
	if w == nil {
		w = &listWorker{}
		init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + drivers.MCPProtocolVersion +
			`","capabilities":{},"clientInfo":{"name":"toolsvc-bench","version":"1"}}}`
		if code := t.post(ctx, w, init, mcpcheck.Call); code != "" {
			return "initialize"
		}
		if code := t.post(ctx, w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); code != "" {
			return "initialize"
		}
		t.workers.Store(worker, w)
	}
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(t.id.Add(1), 10) + `,"method":"tools/list","params":{}}`
	return t.post(ctx, w, body, t.check.Check)
}

// post sends body in w's session and checks the answer with check (none
// for a notification): "" on success, "HTTP <status>", "malformed",
// "transport" or "deadline".
func (t *listTarget) post(ctx context.Context, w *listWorker, body string, check func([]byte) error) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, strings.NewReader(body))
	if err != nil {
		return "request"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", drivers.MCPProtocolVersion)
	if w.session != "" {
		req.Header.Set("Mcp-Session-Id", w.session)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "deadline"
		}
		return "transport"
	}
	defer resp.Body.Close()
	w.buf.Reset()
	if _, err := w.buf.ReadFrom(resp.Body); err != nil {
		if ctx.Err() != nil {
			return "deadline"
		}
		return "transport"
	}
	if resp.StatusCode/100 != 2 {
		return "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		w.session = id
	}
	if check != nil {
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
			return "malformed" // the bridge answers these requests with JSON
		}
		if err := check(w.buf.Bytes()); err != nil {
			return "malformed"
		}
	}
	return ""
}

var _ load.Target = (*listTarget)(nil)

// listBytes is the size of the first tools/list page of a registry of
// Tools tools: with every schema whole (--mcp-list-full-schemas), as
// served by default (the outputSchema abridged), and compacted.
type listBytes struct {
	Tools   int `json:"tools"`
	Full    int `json:"fullBytes"`
	Default int `json:"defaultBytes"`
	Compact int `json:"compactBytes"`
}

// listing is one way tools/list is configured for toolsListBytes.
type listing int

const (
	listFull listing = iota
	listDefault
	listCompact
)

// compactDescriptionChars is the description cap measured: 140 characters.
const compactDescriptionChars = 140

// toolsListBytes measures the bytes of the first tools/list page (the
// whole JSON-RPC response body) for each size, with every schema whole
// (--mcp-list-full-schemas), as served by default, and with the compaction
// flags (--mcp-list-description-max-chars 140
// --mcp-list-strip-schema-metadata), on the product's bridge over the
// synthetic registry. Bytes are deterministic: no load, one request each.
func toolsListBytes(ctx context.Context, sizes []int) ([]listBytes, error) {
	out := make([]listBytes, 0, len(sizes))
	for _, n := range sizes {
		lb := listBytes{Tools: n}
		for l, dst := range map[listing]*int{listFull: &lb.Full, listDefault: &lb.Default, listCompact: &lb.Compact} {
			size, err := firstPageBytes(ctx, n, l)
			if err != nil {
				return nil, err
			}
			*dst = size
		}
		out = append(out, lb)
	}
	return out, nil
}

// firstPageBytes serves one stateless tools/list of a bridge over n
// synthetic tools and returns the size of its response body.
func firstPageBytes(ctx context.Context, n int, l listing) (int, error) {
	r, err := synthetic.Registry(n)
	if err != nil {
		return 0, err
	}
	ch, err := synthetic.Channel(r)
	if err != nil {
		return 0, err
	}
	cfg := mcpbridge.Config{Registry: r, Channel: ch, Auth: auth.NewDevelopment(), PageSize: toolsListPage, Stateless: true}
	switch l {
	case listFull:
		cfg.ListFullSchemas = true
	case listCompact:
		cfg.ListDescriptionMaxChars, cfg.ListStripSchemaMetadata = compactDescriptionChars, true
	}
	b, err := mcpbridge.New(cfg)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", drivers.MCPProtocolVersion)
	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, req)
	check := &mcpcheck.ListCheck{Tools: min(n, toolsListPage), More: n > toolsListPage}
	if rec.Code != http.StatusOK {
		return 0, fmt.Errorf("tools/list of %d tools: HTTP %d", n, rec.Code)
	}
	if err := check.Check(rec.Body.Bytes()); err != nil {
		return 0, fmt.Errorf("tools/list of %d tools: %w", n, err)
	}
	return rec.Body.Len(), nil
}
