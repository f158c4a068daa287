package mcpbridge

import "github.com/toolsvc/toolsvc/internal/mcpbridge/framing"

// ListChanged tells this replica's clients that the resources or prompts
// a provider serves changed (method is notifications/resources/list_changed
// or notifications/prompts/list_changed; anything else is ignored): every
// session's event streams, every initialized stdio client and every
// subscriptions/listen stream that asked for it hear it, as they hear
// notifications/tools/list_changed. The notification has no
// content, so a client learns nothing its credential could not see: its
// next listing is decided by the chain. Each replica hears the upstream
// itself (its own connection to it), so nothing is published to the
// fleet.
func (b *Bridge) ListChanged(method string) {
	if method != notificationResourcesChanged && method != notificationPromptsChanged {
		return
	}
	msg := framing.EncodeNotification(method, struct{}{})
	b.sessions.each(func(p *peer) { p.broadcast(msg) })
	b.stdio.Range(func(k, _ any) bool {
		if p := k.(*peer); p.negotiated() != "" {
			p.notify(msg)
		}
		return true
	})
	b.listeners.listChanged(method)
}

const (
	notificationResourcesChanged = "notifications/resources/list_changed"
	notificationPromptsChanged   = "notifications/prompts/list_changed"
)
