package memory_test

import (
	"context"
	"testing"
	"time"

	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	"github.com/toolsvc/toolsvc/internal/tools/internal/teststore"
	"github.com/toolsvc/toolsvc/internal/tools/memory"
)

// TestReplicasSeeEachOthersVectors: two services on one PostgreSQL schema,
// as two replicas. A memory added through A is found by meaning through B
// (B's index learns it from the store's change feed), and once deleted
// through A it leaves B's index.
func TestReplicasSeeEachOthersVectors(t *testing.T) {
	sts := teststore.PostgresReplicas(t, 2)
	// One model, two embedders: B's is down until B has learned A's
	// vector, so B cannot have made the vector itself.
	embA, embB := newConceptEmbedder("concepts-v1", issueGroups), newConceptEmbedder("concepts-v1", issueGroups)
	embB.down.Store(true)
	a := memory.New(sts[0], memory.WithEmbedder(embA), memory.WithVectorSync(20*time.Millisecond))
	b := memory.New(sts[1], memory.WithEmbedder(embB), memory.WithVectorSync(20*time.Millisecond))
	for _, s := range []*memory.Service{a, b} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.RunVectors(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	ctx := caller(t, "t1", map[string]string{"user_id": "u1"})
	id := add(t, ctx, a, issueCases[2].memory, "user")
	deadline := time.Now().Add(10 * time.Second)
	for !memory.Indexed(b, "t1", id) {
		if time.Now().After(deadline) {
			t.Fatal("B's index never learned the vector written through A")
		}
		time.Sleep(10 * time.Millisecond)
	}
	embB.down.Store(false)
	resp, err := b.SearchMemories(ctx, &memoryv1.SearchMemoriesRequest{Query: issueCases[2].query})
	if err != nil {
		t.Fatal(err)
	}
	if res := resp.GetData().GetResults(); len(res) == 0 || res[0].GetMemoryId() != id {
		t.Fatalf("B's search by meaning: %v, want %s first", res, id)
	}
	if _, err := a.DeleteMemory(ctx, &memoryv1.DeleteMemoryRequest{MemoryId: id}); err != nil {
		t.Fatal(err)
	}
	for memory.Indexed(b, "t1", id) {
		if time.Now().After(deadline) {
			t.Fatal("B's index kept the vector of a memory deleted through A")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
