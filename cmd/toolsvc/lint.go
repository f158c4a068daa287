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
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/server"
	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/backends"
	"github.com/toolsvc/toolsvc/internal/tools/upstream"
)

func cmdLint(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	knowledgeDir := fs.String("knowledge-dir", "examples/knowledge", "knowledge directory the tools are built with")
	upstreams := fs.String("upstreams", "", "upstreams file: check the upstream services' tools too (they must be running)")
	authFile := fs.String("auth-file", "", "auth file: check it too (every problem with its line; roles that grant nothing known, tool sets that hold no tool)")
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
	st, err := backends.Open(ctx, filepath.Join(tmp, "lint.db"), store.WithLogger(logger))
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
	var code int
	if *upstreams == "" {
		tools, violations := registry.Lint(svcs, registry.WithSourceInfo(descriptor.Set))
		code = report(stdout, tools, violations)
	} else {
		code = lintUpstreams(ctx, stdout, stderr, logger, svcs, *upstreams)
	}
	if *authFile != "" {
		reg, err := registry.New(svcs)
		if err != nil {
			fmt.Fprintf(stderr, "toolsvc lint: %v\n", err)
			return 1
		}
		code = max(code, lintAuthFile(stdout, reg, *authFile))
	}
	return code
}

// lintAuthFile checks an auth file as the server would load it, and
// refuses what the server only warns about: a role that grants nothing
// any tool or operator route requires, and a tool set no tool is in
// (docs/OPERATIONS.md, "Roles" and "Tool sets"). Direct grants that match
// nothing are reported as warnings.
func lintAuthFile(w io.Writer, reg *registry.Registry, path string) int {
	ac, err := auth.LoadFile(path)
	if err != nil {
		var ce *auth.ConfigError
		if !errors.As(err, &ce) {
			fmt.Fprintf(w, "FAIL: auth file %s: %v\n", path, err)
			return 1
		}
		fmt.Fprintf(w, "FAIL: auth file %s: %d problem(s)\n", path, len(ce.Problems))
		for _, p := range ce.Problems {
			fmt.Fprintf(w, "  ✗ %s\n", p)
		}
		return 1
	}
	known := server.KnownPermissions(reg)
	problems := append(ac.LintRoles(known), ac.LintToolSets(server.ToolFacts(reg))...)
	for _, warn := range ac.LintPermissions(known) {
		fmt.Fprintf(w, "  ! %s\n", warn)
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "FAIL: auth file %s: %d problem(s)\n", path, len(problems))
		for _, p := range problems {
			fmt.Fprintf(w, "  ✗ %s\n", p)
		}
		return 1
	}
	fmt.Fprintf(w, "PASS: auth file %s: %d role(s), %d tool set(s)\n", path, len(ac.Roles), len(ac.ToolSets))
	return 0
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
		if p := h.Protocol; p != nil {
			fmt.Fprintf(w, "upstream %s: MCP revision %s, %s\n", h.Name, p.Revision, p.Chosen)
		}
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
