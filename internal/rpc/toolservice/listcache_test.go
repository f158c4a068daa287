package toolservice

import (
	"testing"

	"github.com/toolsvc/toolsvc/gen/descriptor"
	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	"github.com/toolsvc/toolsvc/internal/auth"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/interceptors"
)

func builtinRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg, err := registry.New([]registry.Service{
		{Desc: &memoryv1.MemoryService_ServiceDesc, Impl: memoryv1.UnimplementedMemoryServiceServer{}},
		{Desc: &knowledgev1.KnowledgeService_ServiceDesc, Impl: knowledgev1.UnimplementedKnowledgeServiceServer{}},
		{Desc: &syncv1.SyncService_ServiceDesc, Impl: syncv1.UnimplementedSyncServiceServer{}},
		{Desc: &auditv1.AuditService_ServiceDesc, Impl: auditv1.UnimplementedAuditServiceServer{}},
	}, registry.WithSourceInfo(descriptor.Set))
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestListCacheVisibility: the cached visible set of a class is exactly
// what interceptors.Visible allows, principals with the same grants (in
// any order, with duplicates) share one entry, and the figures count it.
func TestListCacheVisibility(t *testing.T) {
	t.Parallel()
	reg := builtinRegistry(t)
	c := newListCache(reg.Latest())
	for _, p := range []*auth.Principal{
		{Permissions: []string{"*"}},
		{Permissions: []string{"memory:read", "knowledge:read"}},
		{Permissions: []string{"nothing:read"}},
		{},
	} {
		var want []string
		for _, tl := range reg.Latest() {
			if interceptors.Visible(p, tl) {
				want = append(want, tl.Name)
			}
		}
		var got []string
		for _, tl := range c.visible(p) {
			got = append(got, tl.Name)
		}
		if len(got) != len(want) {
			t.Fatalf("%v sees %v, want %v", p.Permissions, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%v sees %v, want %v", p.Permissions, got, want)
			}
		}
	}
	scoped := c.visible(&auth.Principal{Permissions: []string{"knowledge:read", "memory:read", "memory:read"}})
	if len(scoped) == 0 || len(scoped) == len(reg.Latest()) {
		t.Fatalf("a memory and knowledge reader sees %d of %d tools", len(scoped), len(reg.Latest()))
	}
	if c.visible(nil) != nil {
		t.Fatal("an unauthenticated caller sees tools")
	}
	if s := c.stats(); s.Misses != 4 || s.Hits != 1 || s.Entries != 4 || s.HitRatePct != 20 {
		t.Fatalf("stats %+v", s)
	}
}
