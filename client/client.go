package client

import (
	"crypto/tls"
	"errors"
	"fmt"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	auditv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/audit/v1"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
	syncv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/sync/v1"
	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
)

// userAgent names the client to the server (ToolContext metadata
// client_name when the caller gives no [WithAgent]).
const userAgent = "toolsvc-client-go"

// Client is a connection to toolsvc with the protocol's rules built in
// (package documentation). It is safe for concurrent use; make one per
// target and share it, and Close it when done.
type Client struct {
	conn   *grpc.ClientConn
	cfg    config
	bearer *bearer
	tools  toolsvcv1.ToolServiceClient
	defs   definitions
}

// New returns a client of the toolsvc server at target (a gRPC target:
// "host:port", "dns:///name:port", ...). It does not connect until the
// first call; an option it cannot apply (an unreadable certificate file)
// is its error.
func New(target string, opts ...Option) (*Client, error) {
	c := &Client{cfg: config{retry: DefaultRetryPolicy, deadlines: DefaultDeadlines, keepalive: DefaultKeepalive, svcConfig: DefaultServiceConfig}}
	for _, o := range opts {
		o(&c.cfg)
	}
	if c.cfg.err != nil {
		return nil, c.cfg.err
	}
	if c.cfg.insecure && (c.cfg.tls != nil || c.cfg.rootCAs != nil || c.cfg.clientCert != nil) {
		return nil, errors.New("client: WithInsecure together with a TLS option")
	}
	dial := []grpc.DialOption{
		grpc.WithUserAgent(userAgent),
		grpc.WithKeepaliveParams(c.cfg.keepalive),
		grpc.WithDefaultServiceConfig(c.cfg.svcConfig),
		// First of the chain: one logical call, its retries inside.
		grpc.WithChainUnaryInterceptor(c.unary),
	}
	if c.cfg.insecure {
		dial = append(dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	} else {
		dial = append(dial, grpc.WithTransportCredentials(credentials.NewTLS(c.cfg.tlsConfig())))
	}
	if c.cfg.token != "" || c.cfg.source != nil {
		c.bearer = &bearer{static: c.cfg.token, source: c.cfg.source, requireTLS: !c.cfg.insecure}
		dial = append(dial, grpc.WithPerRPCCredentials(c.bearer))
	}
	if !c.cfg.noTelemetry {
		dial = append(dial, grpc.WithStatsHandler(otelgrpc.NewClientHandler()))
	}
	conn, err := grpc.NewClient(target, append(dial, c.cfg.dialOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c.conn = conn
	c.tools = toolsvcv1.NewToolServiceClient(conn)
	return c, nil
}

// tlsConfig is the TLS configuration of the options.
func (c *config) tlsConfig() *tls.Config {
	t := c.tls
	if t == nil {
		t = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.rootCAs != nil {
		t.RootCAs = c.rootCAs
	}
	if c.clientCert != nil {
		t.Certificates = []tls.Certificate{*c.clientCert}
	}
	return t
}

// Close closes the connection; calls in flight fail.
func (c *Client) Close() error { return c.conn.Close() }

// Conn is the client's connection, for generated stubs of other services
// served by toolsvc (an upstream's typed methods): calls made on it get
// the client's credentials, errors, retries, keys and deadlines too.
func (c *Client) Conn() grpc.ClientConnInterface { return c.conn }

// Memory is the memory tools' typed service (add-memory, search-memories,
// delete-memory, summarize-memories).
func (c *Client) Memory() memoryv1.MemoryServiceClient {
	return memoryv1.NewMemoryServiceClient(c.conn)
}

// Knowledge is the knowledge tools' typed service (query-knowledge,
// show-knowledge, check-knowledge).
func (c *Client) Knowledge() knowledgev1.KnowledgeServiceClient {
	return knowledgev1.NewKnowledgeServiceClient(c.conn)
}

// Sync is the sync tools' typed service (sync-knowledge, get-sync-status).
func (c *Client) Sync() syncv1.SyncServiceClient { return syncv1.NewSyncServiceClient(c.conn) }

// Audit is the audit tool's typed service (list-audit-events).
func (c *Client) Audit() auditv1.AuditServiceClient { return auditv1.NewAuditServiceClient(c.conn) }

// Tools is ToolService: list, describe and call any tool by name.
// [Client.CallTool] and [Client.ListTools] are the easier way.
func (c *Client) Tools() toolsvcv1.ToolServiceClient { return c.tools }
