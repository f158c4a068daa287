package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/toolsvc/toolsvc/internal/store/cache"
)

func ExampleGroup() {
	ctx := context.Background()
	results := cache.NewGroup(cache.NewMemory(64 << 20))
	key := cache.Key{Tenant: "t1", Scope: "user:alice", Tool: "search-notes", Version: "v1", Domain: "notes", Args: []byte(`{"q":"go"}`)}
	search := func(context.Context) ([]byte, bool, error) {
		fmt.Println("running search-notes")
		return []byte(`{"hits":3}`), true, nil // cacheable: true in the tool contract
	}

	val, hit, _ := results.Do(ctx, key, time.Hour, search)
	fmt.Println(string(val), hit)
	val, hit, _ = results.Do(ctx, key, time.Hour, search)
	fmt.Println(string(val), hit)
	// Output:
	// running search-notes
	// {"hits":3} false
	// {"hits":3} true
}

func ExampleMemory_InvalidateDomain() {
	ctx := context.Background()
	c := cache.NewMemory(64 << 20)
	query := cache.Key{Tenant: "t1", Tool: "search-notes", Version: "v1", Domain: "notes"}
	_ = c.Set(ctx, query, []byte("old result"), time.Hour)

	// A mutation tool (create-note) succeeded in the "notes" domain of tenant t1.
	_ = c.InvalidateDomain(ctx, "t1", "notes")

	_, ok, _ := c.Get(ctx, query)
	fmt.Println("still cached:", ok)
	// Output: still cached: false
}
