package inproc_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/internal/rpc/inproc"
)

// checker is a health service whose Check does what the test says.
type checker struct {
	healthpb.UnimplementedHealthServer
	check func(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error)
}

func (c *checker) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return c.check(ctx, req)
}

func channel(t *testing.T, interceptor grpc.UnaryServerInterceptor, check func(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error)) healthpb.HealthClient {
	t.Helper()
	ch := inproc.New(interceptor)
	healthpb.RegisterHealthServer(ch, &checker{check: check})
	return healthpb.NewHealthClient(ch)
}

func serving(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func TestCallsPassThroughTheInterceptor(t *testing.T) {
	var seen []string
	intercept := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		seen = append(seen, info.FullMethod)
		if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("authorization")) == 0 {
			return nil, status.Error(codes.Unauthenticated, "no credential")
		}
		return handler(ctx, req)
	}
	c := channel(t, intercept, serving)
	if _, err := c.Check(t.Context(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("without metadata: %v, want Unauthenticated from the interceptor", err)
	}
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer k")
	resp, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check = %v, %v", resp, err)
	}
	if len(seen) != 2 || seen[0] != healthpb.Health_Check_FullMethodName {
		t.Errorf("interceptor saw %v", seen)
	}
}

func TestHandlersSeeAnInprocPeer(t *testing.T) {
	tlsInfo := credentials.TLSInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}
	var got *peer.Peer
	c := channel(t, nil, func(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if !inproc.IsInproc(ctx) {
			return nil, errors.New("not in process")
		}
		got, _ = peer.FromContext(ctx)
		return &healthpb.HealthCheckResponse{}, nil
	})
	ctx := peer.NewContext(t.Context(), &peer.Peer{AuthInfo: tlsInfo})
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if got.Addr != inproc.Addr {
		t.Errorf("peer address = %v, want inproc", got.Addr)
	}
	if info, ok := got.AuthInfo.(credentials.TLSInfo); !ok || info.SecurityLevel != credentials.PrivacyAndIntegrity {
		t.Errorf("the caller's TLS state did not reach the handler: %#v", got.AuthInfo)
	}
	if inproc.IsInproc(t.Context()) {
		t.Error("a context without a peer is in process")
	}
}

// Messages are copied both ways, as across a network.
func TestMessagesAreCopied(t *testing.T) {
	var kept *healthpb.HealthCheckResponse
	c := channel(t, nil, func(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		req.Service = "changed by the handler"
		kept = &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}
		return kept, nil
	})
	req := &healthpb.HealthCheckRequest{Service: "mine"}
	resp, err := c.Check(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetService() != "mine" {
		t.Errorf("the handler changed the caller's request: %q", req.GetService())
	}
	resp.Status = healthpb.HealthCheckResponse_NOT_SERVING
	if kept.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Error("the caller's reply aliases the handler's message")
	}
}

func TestHeadersAndTrailersReachCallOptions(t *testing.T) {
	c := channel(t, nil, func(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
		if err := grpc.SetHeader(ctx, metadata.Pairs("retry-after", "3")); err != nil {
			return nil, err
		}
		if err := grpc.SetTrailer(ctx, metadata.Pairs("x-trace", "t1")); err != nil {
			return nil, err
		}
		return nil, status.Error(codes.ResourceExhausted, "slow down")
	})
	var header, trailer metadata.MD
	_, err := c.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("err = %v", err)
	}
	if header.Get("retry-after")[0] != "3" || trailer.Get("x-trace")[0] != "t1" {
		t.Errorf("header %v trailer %v", header, trailer)
	}
}

func TestFaults(t *testing.T) {
	tests := []struct {
		name  string
		check func(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error)
		want  codes.Code
	}{
		{"a plain error is Unknown", func(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			return nil, errors.New("boom")
		}, codes.Unknown},
		{"a status passes unchanged", func(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			return nil, status.Error(codes.NotFound, "none")
		}, codes.NotFound},
		{"no response is Internal", func(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
			return nil, nil
		}, codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := channel(t, nil, tt.check).Check(t.Context(), &healthpb.HealthCheckRequest{})
			if status.Code(err) != tt.want {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestUnknownMethodsAndStreams(t *testing.T) {
	ch := inproc.New(nil)
	err := ch.Invoke(t.Context(), "/no.Such/Method", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Errorf("unknown method: %v, want Unimplemented", err)
	}
	healthpb.RegisterHealthServer(ch, &checker{check: serving})
	if err := ch.Invoke(t.Context(), healthpb.Health_Check_FullMethodName, "not a message", &healthpb.HealthCheckResponse{}); status.Code(err) != codes.Internal {
		t.Errorf("a request that is not a proto message: %v, want Internal", err)
	}
	if _, err := healthpb.NewHealthClient(ch).Watch(t.Context(), &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("streaming: %v, want Unimplemented", err)
	}
}
