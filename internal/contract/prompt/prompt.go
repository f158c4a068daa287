// Package prompt is the contract between a tool package and the
// transports for prompts: message templates a client lists and gets by
// name with arguments (MCP's prompts/list and prompts/get), as package
// resource is for resources. A tool package that serves prompts registers
// a Provider with its service (registry.Service.Prompts); a transport asks
// the providers of the registered services by name prefix and knows
// nothing of a tool (docs/MCP.md, "The transport knows no tool").
//
// A provider gets prompts through resource.Call, which runs a tool method
// on the interceptor chain with the caller's credentials, so a caller
// lists and gets only what the chain lets it call, and every get is
// authenticated, rate limited and audited as a tool call is.
package prompt

import (
	"context"
	"encoding/json"

	"github.com/toolsvc/toolsvc/internal/contract/resource"
)

// Argument is one argument a prompt takes.
type Argument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Prompt is one entry of a listing.
type Prompt struct {
	Name        string     `json:"name"`
	Title       string     `json:"title,omitempty"`
	Description string     `json:"description,omitempty"`
	Arguments   []Argument `json:"arguments,omitempty"`
}

// Result is a prompt got with its arguments: MCP's GetPromptResult.
type Result struct {
	Description string `json:"description,omitempty"`
	// Messages are MCP PromptMessages ({role, content}), as the provider
	// renders them.
	Messages []json.RawMessage `json:"messages"`
}

// Provider serves the prompts whose names start with one prefix.
type Provider interface {
	// Prefix starts every name the provider serves, e.g. "everything/";
	// no provider's prefix starts another's.
	Prefix() string
	// List returns the prompts the caller may see, or the chain's error
	// unchanged (the transport then shows the caller none of this
	// provider's prompts when the chain refuses it: NOT_FOUND, FORBIDDEN).
	List(ctx context.Context, call resource.Call) ([]Prompt, error)
	// Get renders the prompt name (Prefix followed by a non-empty rest)
	// with args, or returns the chain's error unchanged: an unknown
	// prompt, a missing required argument or an unknown one is
	// INVALID_INPUT naming the field.
	Get(ctx context.Context, call resource.Call, name string, args map[string]string) (Result, error)
}
