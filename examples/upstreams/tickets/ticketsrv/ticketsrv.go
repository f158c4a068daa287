// Package ticketsrv is the example upstream's implementation: an in-memory
// support-ticket service. It knows nothing of toolsvc's internals; it reads
// the caller from toolsvc's signed assertion (x-toolsvc-identity, checked
// against toolsvc's JWKS: identity.go) or, for a toolsvc that sends them,
// from the plain x-toolsvc-tenant and x-toolsvc-subject, and, when
// configured, checks toolsvc's own bearer token. The options that make the tests' failure cases (slow, junk) are
// here too.
package ticketsrv

import (
	"context"
	"crypto/subtle"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	ticketsv1 "github.com/toolsvc/toolsvc/examples/upstreams/tickets/gen/tickets/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// Options configure the service.
type Options struct {
	// Token, when set, is the bearer token every call must carry.
	Token string
	// Delay is added to every call (the tests' slow upstream).
	Delay time.Duration
	// OmitTicket answers CreateTicket without its ticket, breaking the
	// response's rules (the tests' malformed upstream).
	OmitTicket bool
	// Verifier, when set, takes the caller from toolsvc's signed
	// x-toolsvc-identity assertion (refusing calls without a valid one)
	// and requires that the permission of the method admitted the call.
	// Without it the caller is read from the plain x-toolsvc-tenant and
	// x-toolsvc-subject, which toolsvc sends only when the upstream's
	// identity.plain_headers is on.
	Verifier *Verifier
}

// Server implements ticketsv1.TicketServiceServer.
type Server struct {
	ticketsv1.UnimplementedTicketServiceServer
	opts Options

	mu      sync.Mutex
	next    int
	tickets map[string]*ticketsv1.Ticket // by tenant + "/" + id
	// Seen is the metadata of the last call, for tests.
	seen metadata.MD
}

// New returns an empty ticket service.
func New(opts Options) *Server {
	return &Server{opts: opts, tickets: map[string]*ticketsv1.Ticket{}}
}

// Register registers the service on s.
func (s *Server) Register(r grpc.ServiceRegistrar) {
	ticketsv1.RegisterTicketServiceServer(r, s)
}

// LastMetadata is the metadata of the last call.
func (s *Server) LastMetadata() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen.Copy()
}

// caller checks the token and returns the tenant and subject toolsvc
// forwarded.
func (s *Server) caller(ctx context.Context, permission string) (tenant, subject string, err error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.seen = md.Copy()
	s.mu.Unlock()
	if s.opts.Delay > 0 {
		select {
		case <-time.After(s.opts.Delay):
		case <-ctx.Done():
			return "", "", status.Error(codes.DeadlineExceeded, "deadline")
		}
	}
	if s.opts.Token != "" {
		got := first(md, "authorization")
		if subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+s.opts.Token)) != 1 {
			return "", "", status.Error(codes.Unauthenticated, "missing or wrong bearer token")
		}
	}
	if s.opts.Verifier != nil {
		id, err := s.opts.Verifier.Verify(ctx, first(md, "x-toolsvc-identity"))
		if err != nil {
			return "", "", status.Error(codes.Unauthenticated, "no valid toolsvc identity: "+err.Error())
		}
		if permission != "" && !id.Allows(permission) {
			return "", "", status.Error(codes.PermissionDenied, "toolsvc did not admit this call with "+permission)
		}
		return id.Tenant, id.Subject, nil
	}
	tenant, subject = first(md, "x-toolsvc-tenant"), first(md, "x-toolsvc-subject")
	if tenant == "" {
		return "", "", status.Error(codes.FailedPrecondition, "no tenant: call through toolsvc")
	}
	return tenant, subject, nil
}

// CreateTicket opens a ticket.
func (s *Server) CreateTicket(ctx context.Context, req *ticketsv1.CreateTicketRequest) (*ticketsv1.CreateTicketResponse, error) {
	tenant, subject, err := s.caller(ctx, "tickets:write")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.next++
	t := &ticketsv1.Ticket{Id: fmt.Sprintf("TCK-%06d", s.next), Title: req.GetTitle(), Priority: req.GetPriority(),
		Status: "open", Tenant: tenant, OpenedBy: subject}
	s.tickets[tenant+"/"+t.Id] = t
	s.mu.Unlock()
	if s.opts.OmitTicket {
		t = nil
	}
	return &ticketsv1.CreateTicketResponse{Ticket: t, AgentHints: &toolsvcv1.AgentHints{
		SuggestedNextActions: []*toolsvcv1.SuggestedAction{{
			Action: "get-ticket", Priority: "low", Description: "Check the ticket's status later",
			ExpectedOutcome: "the ticket's current status", Confidence: proto.Float64(0.9), Reversible: proto.Bool(true),
		}},
		RelatedResources: []*toolsvcv1.RelatedResource{},
		Confidence:       1, SourceQuality: "high", ValidityPeriod: "medium",
		Reasoning:       "The ticket was stored; tickets are only changed by people after this.",
		EstimatedImpact: &toolsvcv1.EstimatedImpact{Benefit: 0.5, Effort: 0.1, Roi: 5},
	}}, nil
}

// GetTicket reads a ticket of the caller's tenant.
func (s *Server) GetTicket(ctx context.Context, req *ticketsv1.GetTicketRequest) (*ticketsv1.GetTicketResponse, error) {
	tenant, _, err := s.caller(ctx, "tickets:read")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	t, ok := s.tickets[tenant+"/"+req.GetTicketId()]
	s.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no ticket %s in tenant %s (table tickets_v2, shard 3)", req.GetTicketId(), tenant)
	}
	return &ticketsv1.GetTicketResponse{Ticket: proto.Clone(t).(*ticketsv1.Ticket)}, nil
}

// PurgeTickets deletes every ticket (not a tool: toolsvc never calls it).
func (s *Server) PurgeTickets(ctx context.Context, _ *ticketsv1.PurgeTicketsRequest) (*ticketsv1.PurgeTicketsResponse, error) {
	if _, _, err := s.caller(ctx, "tickets:purge"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	n := len(s.tickets)
	s.tickets = map[string]*ticketsv1.Ticket{}
	s.mu.Unlock()
	return &ticketsv1.PurgeTicketsResponse{Deleted: int32(n)}, nil
}

// JunkCodec is a server codec that answers every call with bytes that are
// not a protobuf message (the tests' "returning junk" upstream); use it
// with grpc.ForceServerCodec.
type JunkCodec struct{ encoding.Codec }

// Name is the codec's content subtype.
func (JunkCodec) Name() string { return "proto" }

// Marshal returns junk.
func (JunkCodec) Marshal(any) ([]byte, error) { return []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, nil }

// Unmarshal decodes requests as protobuf.
func (JunkCodec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }

func first(md metadata.MD, k string) string {
	if vs := md.Get(k); len(vs) > 0 {
		return vs[0]
	}
	return ""
}
