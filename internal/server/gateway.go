package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolsvc/toolsvc/internal/rest/gateway"
)

// oauthResourceMetadataPath is where OAuth protected resource metadata
// (RFC 9728) is published; 401s point at it when an auth file is set.
const oauthResourceMetadataPath = "/.well-known/oauth-protected-resource"

// mountGateway serves the REST gateway (/v1/..., /api/mcp/..., and
// /openapi.json) on the mux. It is a client of the in-process channel, so
// REST calls pass the same interceptor chain as gRPC ones.
func (s *Server) mountGateway(ctx context.Context) error {
	opts := []gateway.Option{
		gateway.WithMaxRequestBytes(s.cfg.MaxRequestBytes),
		gateway.WithCORS(s.cfg.cors()),
		gateway.WithLogger(s.logger),
		gateway.WithMetadataHeaders(s.metadataHeaders),
	}
	if s.cfg.AuthFile != "" && s.cfg.PublicURL != "" {
		opts = append(opts, gateway.WithResourceMetadata(strings.TrimSuffix(s.cfg.PublicURL, "/")+oauthResourceMetadataPath))
	}
	g, err := gateway.New(ctx, s.channel, s.registry, opts...)
	if err != nil {
		return fmt.Errorf("REST gateway: %w", err)
	}
	s.gateway = g
	g.Mount(s.mux)
	return nil
}

// cors is the gateway's CORS policy of the configuration.
func (c *Config) cors() gateway.CORS {
	return gateway.CORS{AllowedOrigins: c.CORSOrigins, AllowCredentials: c.CORSAllowCredentials}
}
