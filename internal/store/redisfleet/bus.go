package redisfleet

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bus is one Redis pub/sub channel that replicas of a fleet tell each
// other things on (a knowledge set published, an MCP session ended, the
// tool set changed). Messages are best effort: a replica reconnecting
// misses what was published meanwhile, so every user keeps a fallback (a
// store poll, a bounded cache age) and Listen reports every
// resubscription, after which a listener should drop what it cached.
type Bus struct {
	client  redis.UniversalClient
	channel string
}

// NewBus returns the bus of channel on client.
func NewBus(client redis.UniversalClient, channel string) *Bus {
	return &Bus{client: client, channel: channel}
}

// Channel is the bus's channel name.
func (b *Bus) Channel() string { return b.channel }

// Publish sends msg to every replica listening (this one included),
// within one second.
func (b *Bus) Publish(ctx context.Context, msg string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return b.client.Publish(ctx, b.channel, msg).Err()
}

// Listen calls heard with every message until ctx ends. subscribed (may
// be nil) is called each time Redis confirms the subscription: first at
// start (again false), then after every reconnection go-redis makes by
// itself (again true), when messages may have been lost in between.
func (b *Bus) Listen(ctx context.Context, heard func(msg string), subscribed func(again bool)) {
	sub := b.client.Subscribe(ctx, b.channel)
	defer func() { _ = sub.Close() }()
	ch := sub.ChannelWithSubscriptions()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-ch:
			if !ok {
				return
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind == "subscribe" && subscribed != nil {
					n++
					subscribed(n > 1)
				}
			case *redis.Message:
				heard(m.Payload)
			}
		}
	}
}
