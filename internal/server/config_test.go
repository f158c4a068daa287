package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/toolsvc/toolsvc/internal/rest/gateway"
	"github.com/toolsvc/toolsvc/internal/server"
)

// completed is Defaults with a database, through Complete.
func completed(t *testing.T, configure func(*server.Config)) (*server.Config, error) {
	t.Helper()
	c := server.Defaults()
	c.DB = "toolsvc.db"
	if configure != nil {
		configure(&c)
	}
	return &c, c.Complete()
}

// One flag, one value everywhere: Complete gives the components the
// settings they share.
func TestCompleteSharesSettingsWithTheComponents(t *testing.T) {
	c, err := completed(t, func(c *server.Config) {
		c.MaxRequestBytes = 1 << 20
		c.MaxResultBytes = -1
		c.RateLimitCeiling = 7
		c.AuthFile = "auth.yaml"
		c.PublicURL = "https://tools.example/"
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.REST.MaxRequestBytes != 1<<20 || c.MCP.MaxRequestBytes != 1<<20 {
		t.Errorf("max request bytes: REST %d, MCP %d, want %d", c.REST.MaxRequestBytes, c.MCP.MaxRequestBytes, 1<<20)
	}
	if c.MCP.PublicURL != c.PublicURL {
		t.Errorf("MCP public URL %q, want %q", c.MCP.PublicURL, c.PublicURL)
	}
	if want := "https://tools.example/.well-known/oauth-protected-resource"; c.REST.ResourceMetadata != want {
		t.Errorf("REST resource metadata %q, want %q", c.REST.ResourceMetadata, want)
	}
	if c.Chain.MaxResultBytes != 0 {
		t.Errorf("chain max result bytes %d, want 0 (no global cap) for a negative --max-result-bytes", c.Chain.MaxResultBytes)
	}
	if c.Chain.Ceiling.Max != 7 || c.Chain.Ceiling.Window != time.Minute {
		t.Errorf("chain ceiling %+v, want 7 a minute", c.Chain.Ceiling)
	}
}

// A zero configuration completes to the defaults of the server and of
// every component.
func TestCompleteFillsTheDefaults(t *testing.T) {
	c := server.Config{DB: "toolsvc.db"}
	if err := c.Complete(); err != nil {
		t.Fatal(err)
	}
	d := server.Defaults()
	if c.MaxRequestBytes != gateway.DefaultMaxRequestBytes || c.MaxResultBytes != server.DefaultMaxResultBytes {
		t.Errorf("sizes: request %d, result %d", c.MaxRequestBytes, c.MaxResultBytes)
	}
	if c.Chain.Deadlines != d.Chain.Deadlines || c.Chain.IdempotencyTTL != d.Chain.IdempotencyTTL {
		t.Errorf("chain: %+v, %s; want %+v, %s", c.Chain.Deadlines, c.Chain.IdempotencyTTL, d.Chain.Deadlines, d.Chain.IdempotencyTTL)
	}
	if c.MCP.SessionsPerPrincipal != d.MCP.SessionsPerPrincipal || c.MCP.TaskTTL != d.MCP.TaskTTL || c.MCP.ListTTL != d.MCP.ListTTL {
		t.Errorf("MCP: %+v", c.MCP)
	}
	if c.REST.BodyReadTimeout != gateway.DefaultBodyReadTimeout {
		t.Errorf("REST body read timeout %s", c.REST.BodyReadTimeout)
	}
}

// Complete names the bad field, whichever component it belongs to.
func TestCompleteNamesTheBadField(t *testing.T) {
	for _, tc := range []struct {
		name      string
		configure func(*server.Config)
		want      string
	}{
		{"negative request size", func(c *server.Config) { c.MaxRequestBytes = -1 }, "max request bytes -1"},
		{"negative MCP batch", func(c *server.Config) { c.MCP.BatchMaxMessages = -1 }, "mcpbridge: Config.BatchMaxMessages -1"},
		{"negative MCP list TTL", func(c *server.Config) { c.MCP.ListTTL = -time.Second }, "mcpbridge: Config.ListTTL -1s"},
		{"negative idempotency TTL", func(c *server.Config) { c.Chain.IdempotencyTTL = -time.Second }, "idempotency TTL"},
		{"credentials with any origin", func(c *server.Config) {
			c.REST.CORS = gateway.CORS{AllowedOrigins: []string{"*"}, AllowCredentials: true}
		}, "wildcard"},
		{"two embedders", func(c *server.Config) {
			c.EmbeddingsURL, c.EmbeddingsModelDir = "http://127.0.0.1:1/v1/embeddings", "model"
		}, "--embeddings-url and --embeddings-model-dir conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := completed(t, tc.configure)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Complete() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// The embeddings rule is one: Embedder refuses what Complete refuses, in
// the same words.
func TestEmbedderRefusesWhatCompleteRefuses(t *testing.T) {
	both := func(c *server.Config) {
		c.EmbeddingsURL, c.EmbeddingsModelDir = "http://127.0.0.1:1/v1/embeddings", "model"
	}
	c := server.Defaults()
	both(&c)
	_, embedErr := server.Embedder(&c, nil)
	_, completeErr := completed(t, both)
	if embedErr == nil || completeErr == nil || !strings.Contains(completeErr.Error(), embedErr.Error()) {
		t.Fatalf("Embedder: %v; Complete: %v; want the same refusal", embedErr, completeErr)
	}
}
