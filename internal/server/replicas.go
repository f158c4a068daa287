package server

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/toolsvc/toolsvc/internal/store"
	"github.com/toolsvc/toolsvc/internal/store/redisfleet"
	"github.com/toolsvc/toolsvc/internal/tools/knowledge"
)

// knowledgeChannel is the Redis pub/sub channel replicas nudge each other
// on when a knowledge set is published.
const knowledgeChannel = "toolsvc:knowledge:published"

// redisNudge is knowledge.Nudge over Redis pub/sub (redisfleet.Bus, the
// bus MCP's sessions and tool changes use too): a publish reaches every
// replica subscribed within milliseconds. Lost messages (a replica
// reconnecting) are caught by polling the store.
type redisNudge struct {
	bus *redisfleet.Bus
}

// Notify implements knowledge.Nudge.
func (n redisNudge) Notify(ctx context.Context, version int64) error {
	return n.bus.Publish(ctx, strconv.FormatInt(version, 10))
}

// Listen implements knowledge.Nudge. go-redis resubscribes after a
// lost connection by itself.
func (n redisNudge) Listen(ctx context.Context, heard func()) {
	n.bus.Listen(ctx, func(string) { heard() }, nil)
}

// shareKnowledge makes dir one replica of the deployment when the store
// shares a knowledge version (both backends do): it publishes on sync, and
// adds the job that reloads when another replica publishes (nudged through
// Redis when configured, and polling the store every
// KnowledgeRefreshInterval). Negative KnowledgeRefreshInterval turns
// sharing off: each replica reloads only on its own sync.
func shareKnowledge(ctx context.Context, d Deps, dir *knowledge.Dir) error {
	versions, ok := d.Store.(store.KnowledgeVersionStore)
	if !ok || d.Config.KnowledgeRefreshInterval < 0 {
		return nil
	}
	var nudge knowledge.Nudge
	if d.Redis != nil {
		nudge = redisNudge{bus: redisfleet.NewBus(d.Redis, knowledgeChannel)}
	}
	if err := dir.Share(ctx, versions, nudge, d.Logger); err != nil {
		return err
	}
	poll := d.Config.KnowledgeRefreshInterval
	if poll == 0 {
		poll = Defaults().KnowledgeRefreshInterval
	}
	d.Jobs.Go("knowledge watch", func(ctx context.Context) {
		d.Logger.Info("knowledge shared between replicas", slog.Int64("version", dir.State().Version),
			slog.String("poll", poll.String()), slog.Bool("redis_nudge", nudge != nil))
		dir.Watch(ctx, poll)
	})
	return nil
}
