package interceptors_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"buf.build/go/protovalidate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/base/logline"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/interceptors"
	"github.com/toolsvc/toolsvc/internal/rpc/inproc"
	"github.com/toolsvc/toolsvc/internal/store/budget"
	"github.com/toolsvc/toolsvc/internal/store/cache"
	"github.com/toolsvc/toolsvc/internal/store/ratelimit"
	"github.com/toolsvc/toolsvc/internal/store/sqlite"
)

// fakeSync answers get-sync-status with a fixed, valid result: the tool
// costs next to nothing, so a call's cost is the channel's and the chain's.
type fakeSync struct {
	syncv1.UnimplementedSyncServiceServer
}

func (fakeSync) GetSyncStatus(context.Context, *syncv1.GetSyncStatusRequest) (*syncv1.GetSyncStatusResponse, error) {
	return &syncv1.GetSyncStatusResponse{
		Data: &syncv1.GetSyncStatusData{Healthy: true, TimeSinceSync: "5 minutes ago", Stats: &syncv1.SyncStats{},
			KnowledgeSet: &syncv1.KnowledgeSetInfo{}},
		AgentHints: okHints(),
	}, nil
}

// benchKeys is how many API keys the chain benchmarks rotate over, so that
// the per-principal rate limit (60 a minute for get-sync-status) admits
// every call, as the load tool does.
const benchKeys = 8192

// syncChain is the real chain (API-key auth, policy, rate limits,
// validation, audit into SQLite, metrics, JSON logs, cache) over fakeSync
// on the in-process channel, without the steps named, and the keys to
// call it with. Nil steps: no chain at all.
func syncChain(b *testing.B, without []string) (syncv1.SyncServiceClient, []context.Context) {
	b.Helper()
	return syncChainWith(b, without, governanceOff, nil)
}

// Governance setups of the chain benchmarks: how the bench keys get
// sync:read, and what they see (docs/OPERATIONS.md, "Governance").
const (
	governanceOff    = "off"    // direct permissions, no sets (as before roles existed)
	governanceRole   = "role"   // the grant comes from a role
	governanceBound  = "bound"  // a role grants it and binds the key to a tool set
	governanceChosen = "chosen" // a role, and each call chooses a set (x-toolsvc-tool-set)
)

// syncChainWith is syncChain with the keys' grants set up as mode says and
// further governance set up by govern, which may add to the auth file and
// the chain's configuration (budgets, caps).
func syncChainWith(b *testing.B, without []string, mode string, govern func(*auth.Config, *auth.Authenticator, *interceptors.Config)) (syncv1.SyncServiceClient, []context.Context) {
	b.Helper()
	reg, err := registry.New([]registry.Service{{Desc: &syncv1.SyncService_ServiceDesc, Impl: fakeSync{}}})
	if err != nil {
		b.Fatal(err)
	}
	cfg := &auth.Config{}
	if mode != governanceOff {
		cfg.ToolSets = []auth.ToolSetConfig{{Name: "status", Include: []auth.ToolSelector{{Tag: "sync", Category: "query"}}}}
		cfg.Roles = []auth.RoleConfig{{Name: "sync-reader", Permissions: []string{"sync:read"}}}
		if mode == governanceBound {
			cfg.Roles[0].ToolSets = []string{"status"}
		}
	}
	ctxs := make([]context.Context, benchKeys)
	for i := range ctxs {
		key := fmt.Sprintf("bench-key-%05d-0123456789abcdef", i)
		k := auth.APIKeyConfig{KeySHA256: auth.HashKey(key), Subject: fmt.Sprintf("svc-%d", i), Tenant: "acme", Permissions: []string{"sync:read"}}
		if mode != governanceOff {
			k.Permissions, k.Roles = nil, []string{"sync-reader"}
		}
		cfg.APIKeys = append(cfg.APIKeys, k)
		ctxs[i] = metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+key)
		if mode == governanceChosen {
			ctxs[i] = metadata.AppendToOutgoingContext(ctxs[i], "x-toolsvc-tool-set", "status")
		}
	}
	a, err := auth.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "audit.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	v, err := protovalidate.New()
	if err != nil {
		b.Fatal(err)
	}
	logger := slog.New(logline.NewJSONHandler(io.Discard, nil)) // encoded as served, written nowhere
	m := interceptors.NewMetrics(nil)
	auditor := runAuditor(b, st, logger)
	c := cache.NewMemory(1 << 20)
	ic := interceptors.Config{
		Registry: reg, Auth: a, Limiter: ratelimit.NewMemory(), Cache: c, Group: cache.NewGroup(c), Auditor: auditor,
		Validator: v, Metrics: m, Logger: logger, ServiceVersion: "9.9.9",
	}
	if govern != nil {
		govern(cfg, a, &ic)
	}
	var chain grpc.UnaryServerInterceptor
	if without != nil {
		chain = interceptors.ChainWithout(ic, without...)
	}
	ch := inproc.New(chain)
	syncv1.RegisterSyncServiceServer(ch, fakeSync{})
	return syncv1.NewSyncServiceClient(ch), ctxs
}

// BenchmarkChainSteps measures the chain by what each step costs in its
// absence: the whole chain over a tool that costs nothing, the same
// chain without one step at a time, and no chain at all (the in-process
// channel alone). A step's cost is the whole chain's minus the chain
// without it, allocations and the collector's share included. auth,
// policy and resolve cannot be left out (every later step needs the
// principal and the tool): the chain's cost minus the other steps' is
// theirs plus the glue. Run:
//
//	go test -run '^$' -bench BenchmarkChainSteps -benchmem -count 6 ./internal/interceptors/
func BenchmarkChainSteps(b *testing.B) {
	cases := []struct {
		name    string
		without []string
	}{
		{"whole", []string{}},
		{"no-chain", nil},
		{"without-observe", []string{"observe"}},
		{"without-shed", []string{"shed"}},
		{"without-audit", []string{"audit", "auditGate"}},
		{"without-rateLimit", []string{"rateLimit"}},
		{"without-deadline", []string{"deadline"}},
		{"without-validate", []string{"validate"}},
		{"without-result", []string{"result"}},
		{"without-idempotent", []string{"idempotent"}},
		{"without-cache", []string{"cache"}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			client, ctxs := syncChain(b, tc.without)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := client.GetSyncStatus(ctxs[i%len(ctxs)], &syncv1.GetSyncStatusRequest{}); err != nil {
					b.Fatalf("call: %v", err)
				}
				i++
			}
		})
	}
}

// BenchmarkChainRolesSets measures the whole chain with roles and tool
// sets off (direct permissions, as before they existed) and on: the grant
// from a role, the key bound to a tool set by its role, and a set chosen
// on every call with x-toolsvc-tool-set. The audit steps are left out:
// what governance changes is auth, policy and the principal, and the audit
// writer's batches (their timing on a loaded machine) vary the counts by
// far more than governance costs. Run:
//
//	go test -run '^$' -bench BenchmarkChainRolesSets -benchmem -count 6 ./internal/interceptors/
func BenchmarkChainRolesSets(b *testing.B) {
	for _, mode := range []string{governanceOff, governanceRole, governanceBound, governanceChosen} {
		b.Run(mode, func(b *testing.B) {
			client, ctxs := syncChainWith(b, []string{"audit", "auditGate"}, mode, nil)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := client.GetSyncStatus(ctxs[i%len(ctxs)], &syncv1.GetSyncStatusRequest{}); err != nil {
					b.Fatalf("call: %v", err)
				}
				i++
			}
		})
	}
}

// BenchmarkChainGovernance measures what budgets and result caps add to
// the chain (docs/BENCHMARKS.md "Governance"), without the audit steps,
// whose background writer makes instruction counts under callgrind vary
// by tens of thousands per call and is the same in every case: off is
// today's chain;
// budgets charges every call to two in-process budgets (its tenant's and
// its key's) that never run out; caps sizes every result against the 4 MiB
// global cap; both is both. Run:
//
//	go test -run '^$' -bench BenchmarkChainGovernance -benchmem -count 6 ./internal/interceptors/
func BenchmarkChainGovernance(b *testing.B) {
	withBudgets := func(cfg *auth.Config, a *auth.Authenticator, ic *interceptors.Config) {
		cfg.Budgets = &auth.BudgetsConfig{Limits: []auth.BudgetConfig{
			{Name: "tenant-daily", Per: auth.BudgetPerTenant, Units: 1 << 40, Window: 24 * time.Hour},
			{Name: "key-daily", Per: auth.BudgetPerKey, Units: 1 << 40, Window: 24 * time.Hour},
		}}
		if err := a.Reload(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
		ic.Budgets = interceptors.NewBudgets(a, budget.NewMemory(nil), nil)
	}
	withCaps := func(_ *auth.Config, _ *auth.Authenticator, ic *interceptors.Config) { ic.MaxResultBytes = 4 << 20 }
	cases := []struct {
		name   string
		govern func(*auth.Config, *auth.Authenticator, *interceptors.Config)
	}{
		{"off", nil},
		{"budgets", withBudgets},
		{"caps", withCaps},
		{"both", func(c *auth.Config, a *auth.Authenticator, ic *interceptors.Config) {
			withBudgets(c, a, ic)
			withCaps(c, a, ic)
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			client, ctxs := syncChainWith(b, []string{"audit", "auditGate"}, governanceOff, tc.govern)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := client.GetSyncStatus(ctxs[i%len(ctxs)], &syncv1.GetSyncStatusRequest{}); err != nil {
					b.Fatalf("call: %v", err)
				}
				i++
			}
		})
	}
}
