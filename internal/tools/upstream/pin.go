package upstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/store"
)

// Pinned definitions (docs/MCP.md, "Pinned definitions"): the definition
// of an upstream MCP tool an agent reads (its description above all) is an
// instruction channel, so a server may not change it behind the operator's
// back. The first definition of each tool that passes the checklist is
// recorded in the store, shared by the fleet (or the upstreams file pins
// it by fingerprint); a later tools/list that offers another definition
// does not change what agents see. The tool keeps its approved definition
// when its inputSchema is unchanged (the calls it describes are still the
// server's), or is held out with the reason; the operator view lists the
// held change with a diff until an operator approves it (Set.Approve).

// Values of definitions.
const (
	DefinitionsPin    = "pin"
	DefinitionsFollow = "follow"
)

// FirstSeen is the ApprovedBy of a definition recorded when its tool
// first passed the checklist.
const FirstSeen = "first seen"

// AuditTenant is the tenant under which pinning's own steps (a definition
// recorded, a change held) are audited; an approval is audited under the
// approving operator's.
const AuditTenant = "_upstreams"

// AuditSubject is the subject of pinning's own audit records.
const AuditSubject = "toolsvc"

var fingerprintRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// HeldChange is a definition a server offers for a pinned tool that
// differs from the approved one.
type HeldChange struct {
	// Tool is the served name; Listed the name the server lists.
	Tool   string `json:"tool"`
	Listed string `json:"listed"`
	// Approved is the fingerprint agents' definition has; Offered the
	// server's new one, which Set.Approve takes.
	Approved string `json:"approved"`
	Offered  string `json:"offered"`
	// Served: the approved definition is still served; otherwise the tool
	// is held out.
	Served bool   `json:"served"`
	Reason string `json:"reason"`
	// Diff lists each field that changed: "- field: old" and
	// "+ field: new" lines.
	Diff []string `json:"diff"`

	def []byte
}

// pins is the state pinning keeps per upstream.
type pins struct {
	mu sync.Mutex
	// memory holds approvals when the set has no store (tests, lint).
	memory map[string]*store.ToolDefinition
	// audited remembers the held fingerprints already audited.
	audited map[string]bool
}

// definitionJSON is the canonical JSON of a tool's definition as the
// server lists it: keys sorted, no insignificant space.
func definitionJSON(d mcpToolDesc) []byte {
	var v any
	b, _ := json.Marshal(d)
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}

// fingerprintOf is sha256: and the hex digest of a definition's JSON.
func fingerprintOf(def []byte) string {
	sum := sha256.Sum256(def)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Fingerprint is the fingerprint of an MCP tool definition given as JSON
// (as tools/list lists one), the value of a pins entry.
func Fingerprint(tool json.RawMessage) (string, error) {
	var d mcpToolDesc
	if err := json.Unmarshal(tool, &d); err != nil {
		return "", err
	}
	return fingerprintOf(definitionJSON(d)), nil
}

// approvals reads the upstream's approved definitions.
func (u *Upstream) approvals(ctx context.Context) (map[string]*store.ToolDefinition, error) {
	if ds := u.set.defs; ds != nil {
		return ds.ApprovedDefinitions(ctx, u.cfg.Name)
	}
	u.set.pins.mu.Lock()
	defer u.set.pins.mu.Unlock()
	out := map[string]*store.ToolDefinition{}
	for k, d := range u.set.pins.memory {
		if up, tool, _ := strings.Cut(k, "\x00"); up == u.cfg.Name {
			out[tool] = d
		}
	}
	return out, nil
}

// record records d as its tool's first definition unless one is, and
// returns the recorded one.
func (u *Upstream) record(ctx context.Context, d *store.ToolDefinition, replace bool) (*store.ToolDefinition, error) {
	if ds := u.set.defs; ds != nil {
		if replace {
			return d, ds.ApproveDefinition(ctx, d)
		}
		return ds.PinDefinition(ctx, d)
	}
	u.set.pins.mu.Lock()
	defer u.set.pins.mu.Unlock()
	if u.set.pins.memory == nil {
		u.set.pins.memory = map[string]*store.ToolDefinition{}
	}
	k := d.Upstream + "\x00" + d.Tool
	if cur := u.set.pins.memory[k]; cur != nil && !replace {
		return cur, nil
	}
	u.set.pins.memory[k] = d
	return d, nil
}

// pinned keeps what agents see of the upstream's tools to the approved
// definitions: a tool first seen is recorded, a changed one keeps its
// approved definition or is held out (u.held says why). With definitions:
// follow every tool passes as listed. Called with u.mu held.
func (u *Upstream) pinned(ctx context.Context, tools []*mcpTool) []*mcpTool {
	u.held = nil
	if u.cfg.Definitions == DefinitionsFollow {
		return tools
	}
	approved, err := u.approvals(ctx)
	if err != nil {
		// Fail closed: without the approved definitions no tool is served.
		for _, t := range tools {
			u.held = append(u.held, HeldChange{Tool: t.desc.Name, Listed: t.listed, Reason: "the approved definitions could not be read from the store: " + u.errText(err)})
		}
		return nil
	}
	out := make([]*mcpTool, 0, len(tools))
	for _, t := range tools {
		def := definitionJSON(t.orig)
		fp := fingerprintOf(def)
		a := approved[t.listed]
		want := u.cfg.Pins[t.listed]
		switch {
		case want != "":
			if a != nil && a.Fingerprint != want {
				a = nil // the file's pin wins over what the store recorded
			}
		case a == nil:
			a, err = u.record(ctx, &store.ToolDefinition{Upstream: u.cfg.Name, Tool: t.listed, Fingerprint: fp, Definition: def, ApprovedBy: FirstSeen}, false)
			if err != nil {
				u.held = append(u.held, HeldChange{Tool: t.desc.Name, Listed: t.listed, Offered: fp, Reason: "the definition could not be recorded in the store: " + u.errText(err)})
				continue
			}
			if a.Fingerprint == fp && a.ApprovedBy == FirstSeen {
				u.audit(ctx, t.desc.Name, store.DecisionAllow, "OK", "definition "+fp+" recorded as approved (first seen)")
			}
			want = a.Fingerprint
		default:
			want = a.Fingerprint
		}
		if fp == want {
			out = append(out, t)
			continue
		}
		h := HeldChange{Tool: t.desc.Name, Listed: t.listed, Approved: want, Offered: fp, def: def}
		switch a {
		case nil:
			h.Reason = "the upstreams file pins this tool to " + want + " and the server lists another definition; it is held out until the file pins the new one"
		default:
			h.Diff = diffDefinitions(a.Definition, def)
			var ad mcpToolDesc
			if json.Unmarshal(a.Definition, &ad) != nil {
				h.Reason = "the approved definition does not decode; the tool is held out until an operator approves the new one"
				break
			}
			if !sameJSON(ad.InputSchema, t.orig.InputSchema) {
				h.Reason = "the server changed the tool's inputSchema: the calls the approved definition describes may no longer be accepted, so the tool is held out until an operator approves the change"
				break
			}
			at, refusals := u.checkListed(ad)
			if at == nil {
				h.Reason = "the approved definition no longer passes the checklist (" + refusals[0].Rule + "); the tool is held out until an operator approves the change"
				break
			}
			out = append(out, at)
			h.Served = true
			h.Reason = "the server changed the tool's definition; its inputSchema is unchanged, so the approved definition is still served until an operator approves the change"
		}
		u.held = append(u.held, h)
		u.logger.Warn("upstream tool definition changed: held for the operator", slog.String("upstream", u.cfg.Name),
			slog.String("tool", h.Tool), slog.String("approved", h.Approved), slog.String("offered", h.Offered), slog.Bool("served", h.Served))
		if u.firstAudit(h.Listed + "\x00" + h.Offered) {
			u.audit(ctx, h.Tool, store.DecisionDeny, "DEFINITION_HELD", "definition "+h.Offered+" held (approved "+h.Approved+"): "+h.Reason)
		}
	}
	return out
}

func (u *Upstream) firstAudit(key string) bool {
	u.set.pins.mu.Lock()
	defer u.set.pins.mu.Unlock()
	if u.set.pins.audited == nil {
		u.set.pins.audited = map[string]bool{}
	}
	key = u.cfg.Name + "\x00" + key
	if u.set.pins.audited[key] {
		return false
	}
	u.set.pins.audited[key] = true
	return true
}

// audit records a pinning step.
func (u *Upstream) audit(ctx context.Context, tool, decision, code, reason string) {
	if u.set.auditor == nil {
		return
	}
	e := &store.AuditEvent{At: time.Now().UTC(), Tool: tool, Subject: AuditSubject, Tenant: AuditTenant, Transport: "upstream " + u.cfg.Name,
		Decision: decision, Code: code, Reason: reason}
	if err := u.set.auditor.AppendAudit(context.WithoutCancel(ctx), e); err != nil {
		u.logger.Error("upstream definition step not audited", slog.String("upstream", u.cfg.Name), slog.String("tool", tool), slog.String("error", err.Error()))
	}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

// diffDefinitions lists the fields of two definitions' JSON that differ.
func diffDefinitions(old, cur []byte) []string {
	var a, b map[string]any
	_ = json.Unmarshal(old, &a)
	_ = json.Unmarshal(cur, &b)
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []string
	for _, k := range names {
		ja, _ := json.Marshal(a[k])
		jb, _ := json.Marshal(b[k])
		if bytes.Equal(ja, jb) {
			continue
		}
		if _, ok := a[k]; ok {
			out = append(out, "- "+k+": "+string(ja))
		}
		if _, ok := b[k]; ok {
			out = append(out, "+ "+k+": "+string(jb))
		}
	}
	return out
}

// Held returns the held changes of every upstream.
func (s *Set) Held() map[string][]HeldChange {
	out := map[string][]HeldChange{}
	for _, u := range s.ups {
		u.mu.Lock()
		if len(u.held) > 0 {
			out[u.cfg.Name] = slices.Clone(u.held)
		}
		u.mu.Unlock()
	}
	return out
}

// Approve makes the definition a server offers for a held tool (by its
// served or listed name, and the offered fingerprint the operator view
// shows) the approved one, records it in the store for the fleet, audits
// it under the operator's name and serves it. An unknown upstream, tool
// or fingerprint is NOT_FOUND; a tool the upstreams file pins is
// CONFLICT (the file says what is approved).
func (s *Set) Approve(ctx context.Context, upstreamName, tool, fingerprint, by, tenant string) error {
	var u *Upstream
	for _, x := range s.ups {
		if x.cfg.Name == upstreamName {
			u = x
		}
	}
	if u == nil {
		return toolerr.New(toolerr.NotFound, "no upstream %q", upstreamName).WithDetails(map[string]any{"field": "upstream"})
	}
	u.mu.Lock()
	var h *HeldChange
	for i := range u.held {
		if (u.held[i].Tool == tool || u.held[i].Listed == tool) && u.held[i].Offered == fingerprint {
			h = &u.held[i]
		}
	}
	var held HeldChange
	if h != nil {
		held = *h
	}
	u.mu.Unlock()
	switch {
	case h == nil:
		return toolerr.New(toolerr.NotFound, "upstream %s holds no change of tool %q with fingerprint %q: the operator view lists the held changes", upstreamName, tool, fingerprint)
	case u.cfg.Pins[held.Listed] != "":
		return toolerr.New(toolerr.Conflict, "the upstreams file pins tool %q: pin %s there instead", held.Listed, fingerprint)
	case held.def == nil:
		return toolerr.New(toolerr.Conflict, "the change of tool %q cannot be approved: %s", held.Listed, held.Reason)
	}
	if _, err := u.record(ctx, &store.ToolDefinition{Upstream: upstreamName, Tool: held.Listed, Fingerprint: fingerprint, Definition: held.def, ApprovedBy: by}, true); err != nil {
		return toolerr.Wrap(err, toolerr.ProviderError, "the approval could not be recorded in the store")
	}
	if s.auditor != nil {
		e := &store.AuditEvent{At: time.Now().UTC(), Tool: held.Tool, Subject: by, Tenant: tenant, Transport: "upstream " + upstreamName,
			Decision: store.DecisionAllow, Code: "DEFINITION_APPROVED", Reason: "definition " + fingerprint + " approved, replacing " + held.Approved}
		if err := s.auditor.AppendAudit(context.WithoutCancel(ctx), e); err != nil {
			return toolerr.Wrap(err, toolerr.ProviderError, "the approval was recorded but could not be audited")
		}
	}
	u.refresh()
	return nil
}

// watchApprovals reads the store's approvals every interval and reads an
// upstream's tools again when an approval made on another replica settles
// one of its held changes.
func (s *Set) watchApprovals(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, u := range s.ups {
			u.mu.Lock()
			held := slices.Clone(u.held)
			u.mu.Unlock()
			if len(held) == 0 {
				continue
			}
			approved, err := u.approvals(ctx)
			if err != nil {
				continue
			}
			for _, h := range held {
				if a := approved[h.Listed]; a != nil && a.Fingerprint != h.Approved {
					u.refresh()
					break
				}
			}
		}
	}
}

// auditAppender is the store's audit, for pinning's steps.
type auditAppender interface {
	AppendAudit(ctx context.Context, e *store.AuditEvent) error
}

// WithStore records approved definitions in st (a store.DefinitionStore,
// shared by the fleet) and audits pinning's steps in it; every interval
// the set reads approvals made on other replicas (0: never). Default: the
// approvals live in the process and nothing is audited.
func WithStore(st any, interval time.Duration) Option {
	return func(s *Set) {
		if ds, ok := st.(store.DefinitionStore); ok {
			s.defs = ds
		}
		if a, ok := st.(auditAppender); ok {
			s.auditor = a
		}
		s.approvalsEvery = interval
	}
}
