package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/toolsvc/toolsvc/bench/internal/drivers"
	"github.com/toolsvc/toolsvc/bench/internal/load"
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
	b, err := mcpbridge.New(mcpbridge.Config{Registry: r, Channel: synthetic.NoChannel{}, Auth: auth.NewDevelopment()})
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
	defer hs.Close()
	fmt.Fprintln(os.Stdout, lis.Addr().String())
	<-ctx.Done()
	return nil
}

// toolsListScale measures tools/list (first page, as a client starts) on
// bridges with growing registries, each in its own process.
func (m *measurer) toolsListScale(ctx context.Context, r *results) error {
	for _, n := range m.cfg.toolsListSizes {
		p, err := startBaseline(toolsListKind + strconv.Itoa(n))
		if err != nil {
			return err
		}
		client := drivers.NewHTTPClient(maxOf(m.cfg.concurrency))
		d, err := drivers.NewMCPRequest(client, "http://"+p.addr+"/mcp", "tools/list", json.RawMessage(`{}`), true)
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

var _ load.Target = (*drivers.MCP)(nil)
