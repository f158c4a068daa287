package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolsvc/toolsvc/internal/contract/prompt"
	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/mcpbridge/framing"
)

// promptProviders returns the prompt providers of a registry's services
// (registry.Service.Prompts): the bridge serves prompts by name prefix and
// knows nothing of the tools behind them. No provider's prefix may start
// another's, so that a name has one provider.
func promptProviders(reg *registry.Registry) ([]prompt.Provider, error) {
	var out []prompt.Provider
	for _, s := range reg.Services() {
		p := s.Prompts
		if p == nil {
			continue
		}
		for _, q := range out {
			if strings.HasPrefix(p.Prefix(), q.Prefix()) || strings.HasPrefix(q.Prefix(), p.Prefix()) {
				return nil, fmt.Errorf("mcpbridge: prompt providers of prefixes %q and %q overlap", q.Prefix(), p.Prefix())
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// listPrompts answers prompts/list with every provider's prompts the
// caller may see: providers list through the chain, so a provider whose
// listing the chain refuses the caller (NOT_FOUND, FORBIDDEN) lists none.
func (b *Bridge) listPrompts(ctx context.Context, x *exchange, raw json.RawMessage) ([]byte, error) {
	return listProvided[prompt.Prompt](ctx, b.caller(x), raw, "prompts", b.catalog.Load().tools.resources.prompts)
}

// getPrompt answers prompts/get: what the provider of the name's prefix
// renders through the chain (a caller without permission, an unknown
// prompt or a wrong argument gets the chain's error, naming the field).
func (b *Bridge) getPrompt(ctx context.Context, x *exchange, raw json.RawMessage) ([]byte, error) {
	var p struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	if err := params(raw, &p); err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, framing.InvalidParams(`invalid params: "name" is missing: give the name of a prompt prompts/list gives`)
	}
	providers := b.catalog.Load().tools.resources.prompts
	for _, pr := range providers {
		if rest, ok := strings.CutPrefix(p.Name, pr.Prefix()); ok && rest != "" {
			res, err := pr.Get(ctx, b.caller(x), p.Name, p.Arguments)
			if err != nil {
				return nil, protocolError(err)
			}
			if res.Messages == nil {
				res.Messages = []json.RawMessage{}
			}
			return json.Marshal(res)
		}
	}
	prefixes := make([]string, 0, len(providers))
	for _, pr := range providers {
		prefixes = append(prefixes, pr.Prefix()+"…")
	}
	msg := "invalid params: name: no prompt " + fmt.Sprintf("%q", p.Name) + " is served"
	if len(prefixes) > 0 {
		msg += "; prompts are named " + strings.Join(prefixes, " or ")
	}
	return nil, &framing.Error{Code: CodeInvalidParams, Message: msg, Data: map[string]any{"field": "name"}}
}
