package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/open"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

func cmdLint(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	knowledgeDir := fs.String("knowledge-dir", "examples/knowledge", "knowledge directory the tools are built with")
	upstreams := fs.String("upstreams", "", "upstreams file: check the upstream services' tools too (they must be running)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	tmp, err := os.MkdirTemp("", "toolsvc-lint-*")
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc lint: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := open.Open(ctx, filepath.Join(tmp, "lint.db"), store.WithLogger(logger))
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc lint: %v\n", err)
		return 1
	}
	defer func() { _ = st.Close() }()
	cfg := &server.Config{KnowledgeDir: *knowledgeDir}
	svcs, cleanup, err := server.Builtin(ctx, server.Deps{Config: cfg, Store: st, Logger: logger})
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc lint: %v\n", err)
		return 1
	}
	if cleanup != nil {
		defer cleanup()
	}
	if *upstreams == "" {
		tools, violations := registry.Lint(svcs, registry.WithSourceInfo(descriptor.Set))
		return report(stdout, tools, violations)
	}
	return lintUpstreams(ctx, stdout, stderr, logger, svcs, *upstreams)
}

// lintUpstreams checks the in-tree tools and every upstream's: a tool the
// running service would refuse, or an upstream whose contracts cannot be
// read, is a violation.
func lintUpstreams(ctx context.Context, stdout, stderr io.Writer, logger *slog.Logger, svcs []registry.Service, path string) int {
	ups, err := upstream.Load(ctx, path, logger)
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc lint: %v\n", err)
		return 1
	}
	defer ups.Close()
	reg, err := registry.New(append(svcs, ups.Services()...), registry.WithSourceInfo(descriptor.Set))
	if err != nil {
		if ce, ok := registry.AsCheckError(err); ok {
			return report(stdout, nil, ce.Violations)
		}
		fmt.Fprintf(stderr, "toolsvc lint: %v\n", err)
		return 1
	}
	var violations []registry.Violation
	for _, e := range ups.Errors() {
		violations = append(violations, registry.Violation{Rule: "upstream.contracts", Method: "", Tool: "", Message: e.Error()})
	}
	for _, r := range append(ups.Refused(), reg.Refused()...) {
		v := r.Violation
		v.Message = r.Source + ": " + v.Message
		violations = append(violations, v)
	}
	if len(violations) == 0 {
		printServing(stdout, ups.Health(reg))
	}
	return report(stdout, reg.All(), violations)
}

// printServing says, per MCP server, what the operator's file decided:
// the verbs it added with their meanings, the names it mapped, the
// overlays and how definitions are treated (docs/ADDING-A-TOOL.md).
func printServing(w io.Writer, hs []upstream.Health) {
	for _, h := range hs {
		sv := h.Serving
		if sv == nil {
			continue
		}
		fmt.Fprintf(w, "upstream %s: definitions %s", h.Name, sv.Definitions)
		if sv.CloseInputSchemas {
			fmt.Fprint(w, ", input schemas closed")
		}
		fmt.Fprintf(w, ", %d overlay(s)\n", len(sv.Overlays))
		for _, v := range slices.Sorted(maps.Keys(sv.Verbs)) {
			fmt.Fprintf(w, "    verb %s (added by the upstreams file): %s\n", v, sv.Verbs[v])
		}
		for _, n := range slices.Sorted(maps.Keys(sv.Names)) {
			fmt.Fprintf(w, "    %s served as %s\n", n, sv.Names[n])
		}
	}
}

// report prints the violations, or every tool with the checklist items
// the registry enforced on it (registry.Checklist, docs/CONTRACTS.md) and,
// once, the items that do not apply to a definition with the reason.
func report(w io.Writer, tools []*registry.Tool, violations []registry.Violation) int {
	if len(violations) > 0 {
		fmt.Fprintf(w, "FAIL: %d violation(s)\n", len(violations))
		for _, v := range violations {
			fmt.Fprintf(w, "  ✗ %s\n", v)
		}
		return 1
	}
	var enforced, na []registry.ChecklistItem
	for _, c := range registry.Checklist {
		if c.Enforced() {
			enforced = append(enforced, c)
		} else {
			na = append(na, c)
		}
	}
	for _, t := range tools {
		fmt.Fprintf(w, "✓ %s %s  [%s, %s, %s]\n", t.Name, t.Version, t.Spec.GetCategory(), t.Spec.GetResponseTime(), strings.Join(t.Spec.GetPermissions(), " "))
		for _, c := range enforced {
			fmt.Fprintf(w, "    ✓ %s  (%s)\n", c.Item, strings.Join(c.Rules, ", "))
		}
	}
	fmt.Fprintf(w, "Not applicable to a tool definition (docs/CONTRACTS.md):\n")
	for _, c := range na {
		fmt.Fprintf(w, "    - %s: %s\n", c.Item, c.How)
	}
	fmt.Fprintf(w, "PASS: %d tool(s), %d checklist items enforced each, %d not applicable, 0 violations\n", len(tools), len(enforced), len(na))
	return 0
}
