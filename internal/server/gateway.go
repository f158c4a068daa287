package server

import (
	"context"
	"fmt"

	"github.com/toolsvc/toolsvc/internal/rest/gateway"
)

// oauthResourceMetadataPath is where OAuth protected resource metadata
// (RFC 9728) is published; 401s point at it when an auth file is set.
const oauthResourceMetadataPath = "/.well-known/oauth-protected-resource"

// mountGateway serves the REST gateway (/v1/..., /api/mcp/..., and
// /openapi.json) on the mux. It is a client of the in-process channel, so
// REST calls pass the same interceptor chain as gRPC ones.
func (s *Server) mountGateway(ctx context.Context) error {
	// The gateway's settings are s.cfg.REST; its wiring is filled here.
	rc := s.cfg.REST
	rc.Logger, rc.MetadataHeaders = s.logger, s.metadataHeaders
	g, err := gateway.New(ctx, s.channel, s.registry, rc)
	if err != nil {
		return fmt.Errorf("REST gateway: %w", err)
	}
	s.gateway = g
	g.Mount(s.mux)
	return nil
}
