package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Changes without a restart (docs/OPERATIONS.md "Reloading"): the
// Authenticator a server is built with stays the one every transport holds,
// and [Authenticator.Swap] replaces the policy behind it at once. A call
// authenticates against one policy and keeps the principal it got, so a
// call in flight finishes under the policy that admitted it; the next call
// meets the new one. Long-lived conversations (an MCP session, a listen
// stream) ask [Authenticator.Admits] whether their principal still stands
// when told of a swap ([Authenticator.OnSwap]).

// liveState is the swappable part of an Authenticator.
type liveState struct {
	// config is the validated configuration this Authenticator was built
	// from; nil in development mode.
	config *Config
	// cur, once set by Swap, is the policy in force: the Authenticator's
	// own maps are then unused.
	cur atomic.Pointer[Authenticator]

	mu sync.Mutex
	// subscribers are told of every swap, in order of subscription.
	subscribers []func()
	// stopRefresh ends the JWKS refresh of the policy in force when Reload
	// started one.
	stopRefresh context.CancelFunc
	// verifications counts the credentials verified through this
	// holder (Verifications).
	verifications atomic.Uint64
}

// current is the Authenticator whose policy is in force.
func (a *Authenticator) current() *Authenticator {
	if c := a.live.cur.Load(); c != nil {
		return c
	}
	return a
}

// Config returns the validated auth file in force (nil in development
// mode). It is shared: callers must not modify it.
func (a *Authenticator) Config() *Config {
	return a.current().live.config
}

// Swap puts the policy of next in force, atomically for every caller of a,
// and then tells the subscribers ([Authenticator.OnSwap]). Calls already
// authenticated keep their principal. next must not be used on its own
// afterwards.
func (a *Authenticator) Swap(next *Authenticator) {
	a.live.cur.Store(next.current())
	a.live.mu.Lock()
	subs := slices.Clone(a.live.subscribers)
	a.live.mu.Unlock()
	for _, f := range subs {
		f()
	}
}

// OnSwap registers f to run after every [Authenticator.Swap], on the
// swapping goroutine; f must not block for long.
func (a *Authenticator) OnSwap(f func()) {
	a.live.mu.Lock()
	a.live.subscribers = append(a.live.subscribers, f)
	a.live.mu.Unlock()
}

// Reload builds the policy of cfg (validated whole, as [New] does) and
// swaps it in; on any error the policy in force stays and the error, a
// *[ConfigError] for a bad file, is returned. A jwt section equal to the one
// in force keeps its verifier and keys (no new fetch); a new jwks_url is
// fetched now and refreshed every [WithJWKSRefresh] until ctx ends or a
// later Reload replaces it.
func (a *Authenticator) Reload(ctx context.Context, cfg *Config, opts ...Option) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	prev := a.current()
	if prev.dev {
		return &ConfigError{Problems: []string{"development mode (no auth file) has no policy to reload"}}
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	next := newPolicy(cfg)
	keep := cfg.JWT != nil && prev.live.config != nil && reflect.DeepEqual(cfg.JWT, prev.live.config.JWT)
	var stop context.CancelFunc
	switch {
	case keep:
		next.jwt = prev.jwt
	case cfg.JWT != nil:
		rctx, cancel := context.WithCancel(ctx)
		v, err := newJWTVerifier(rctx, cfg.JWT, &o)
		if err != nil {
			cancel()
			return fmt.Errorf("auth: %w", err)
		}
		next.jwt, stop = v, cancel
		if v.fetcher != nil { // Reload is not a constructor: the new URL's refresh runs until the next Reload
			go v.refreshLoop(rctx, v.fetcher, v.refresh)
		}
	}
	a.live.mu.Lock()
	old := a.live.stopRefresh
	if !keep {
		a.live.stopRefresh = stop
	}
	a.live.mu.Unlock()
	a.Swap(next)
	if !keep && old != nil {
		old()
	}
	return nil
}

// Admits reports whether p, authenticated earlier, still stands under the
// policy in force: its key or certificate entry is still there with the same
// subject and tenant, and grants no less than p holds (every permission of
// p still allowed, read-only not added, acting for users not removed, no
// tool-set binding added or narrowed); a
// JWT principal stands while the same issuer is configured (its token's
// expiry bounds it otherwise). The development principal always stands.
func (a *Authenticator) Admits(p *Principal) bool {
	cur := a.current()
	if p == nil {
		return false
	}
	if cur.dev {
		return true
	}
	kind, id, _ := strings.Cut(p.credential, ":")
	var t *Principal
	switch kind {
	case "key":
		var digest [sha256.Size]byte
		if b, err := hex.DecodeString(id); err == nil && len(b) == sha256.Size {
			copy(digest[:], b)
			if e := cur.apiKeys[digest]; e != nil {
				t = e.principal
			}
		}
	case "cert":
		t = cur.certs[id]
	case "jwt":
		return cur.jwt != nil && cur.jwt.issuer == id
	}
	if t == nil || t.Subject != p.Subject || t.Tenant != p.Tenant ||
		(t.ReadOnly && !p.ReadOnly) || (p.ActForUsers && !t.ActForUsers) {
		return false
	}
	for _, g := range p.Permissions {
		if !t.Allows(g) && !slices.Contains(t.Permissions, g) {
			return false
		}
	}
	// A binding to tool sets may not have been added or narrowed.
	if len(t.ToolSets) > 0 {
		if len(p.ToolSets) == 0 {
			return false
		}
		for _, set := range p.ToolSets {
			if !slices.Contains(t.ToolSets, set) {
				return false
			}
		}
	}
	return true
}
