// Package resource is the contract between a tool package and the
// transports for resources: data a client reads by URI (MCP's
// resources/list, resources/read and the completion of a URI template's
// argument) rather than calls. A tool package that serves resources
// registers a Provider with its service (registry.Service.Resources), as it
// registers the service itself; a transport asks the providers of the
// registered services by URI scheme and knows nothing of a tool
// (docs/MCP.md, "The transport knows no tool").
//
// A provider reads through Call, which runs a tool method on the interceptor
// chain with the caller's credentials, so a caller lists and reads only what
// the chain lets it call.
package resource

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/proto"
)

// Call runs the tool method fullMethod (e.g.
// /toolsvc.knowledge.v1.KnowledgeService/ShowKnowledge) with in through the
// interceptor chain, as the caller, and fills out. Its error is the chain's
// gRPC status error, returned unchanged by a Provider.
type Call func(ctx context.Context, fullMethod string, in, out proto.Message) error

// Template describes a provider's resources as an MCP resource template.
type Template struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
}

// Resource is one entry of a listing.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType"`
}

// Content is one representation of a resource that was read: Text, or
// Blob (base64) for binary data.
type Content struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
	Blob     string `json:"blob,omitempty"`
}

// MarshalJSON writes text or blob, never both, as MCP's resource
// contents are one or the other.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Blob != "" {
		return json.Marshal(struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType,omitempty"`
			Blob     string `json:"blob"`
		}{c.URI, c.MIMEType, c.Blob})
	}
	type plain Content
	return json.Marshal(plain(c))
}

// Provider serves the resources of one URI scheme.
type Provider interface {
	// Scheme is the URI prefix of the provider's resources, e.g.
	// "knowledge://"; no two providers of a registry share one.
	Scheme() string
	// Template describes the resources; its URITemplate starts with
	// Scheme.
	Template() Template
	// Instructions is one sentence for the server's instructions telling
	// an agent what the resources are and where, e.g. "Accepted knowledge
	// items are resources at knowledge://{id}."; empty for none.
	Instructions() string
	// List returns the resources the caller may see. A chain error is
	// returned unchanged: the transport shows a caller the chain refuses
	// (NOT_FOUND, FORBIDDEN) no resources of this provider.
	List(ctx context.Context, call Call) ([]Resource, error)
	// Read returns the resource at uri (Scheme followed by a non-empty
	// rest), or the chain's error unchanged.
	Read(ctx context.Context, call Call, uri string) ([]Content, error)
	// Complete returns the values of the template's argument that start
	// with prefix, sorted; none for an argument it does not complete or a
	// caller the chain refuses.
	Complete(ctx context.Context, call Call, argument, prefix string) []string
}

// TemplateLister is a Provider whose resources are described by templates
// known only at run time (an upstream MCP server's resources/templates/list):
// the transport lists them, read through the chain as the caller, after
// the Provider's Template.
type TemplateLister interface {
	Templates(ctx context.Context, call Call) ([]Template, error)
}

// Subscriber is a Provider whose resources can be watched: the transport
// relays a client's subscription to it (resources/subscribe, or a
// subscriptions/listen naming resourceSubscriptions) and, while any
// remains, the provider reports changes through the function its owner
// gave it. Subscribe authorizes the caller through the chain as a read of
// uri does, and returns the chain's error unchanged; Unsubscribe drops one
// subscription Subscribe granted (it runs when a client unsubscribes or
// its session ends, without a caller).
type Subscriber interface {
	Subscribe(ctx context.Context, call Call, uri string) error
	Unsubscribe(uri string)
}
