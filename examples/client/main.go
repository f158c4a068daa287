// Command client is an internal service's use of toolsvc's Go client
// (package client, docs/CLIENT.md): it lists the tools it may call, stores
// a memory through the typed service (the client adds the idempotency key),
// searches for it by name with CallTool, and shows what a failure carries.
//
//	go run ./cmd/toolsvc serve &                         # development mode, plaintext on loopback
//	go run ./examples/client -addr 127.0.0.1:9090 -insecure
//
// Against a server with TLS and an auth file, give -ca (the server's CA,
// else the system's roots) and an API key or JWT in TOOLSVC_TOKEN, or a
// client certificate with -cert and -key.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/toolsvc/toolsvc/client"
	knowledgev1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/knowledge/v1"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
)

func main() { os.Exit(run()) }

// run does the example's calls and returns the exit code.
func run() int {
	addr := flag.String("addr", "127.0.0.1:9090", "toolsvc's gRPC address")
	plaintext := flag.Bool("insecure", false, "connect without TLS (a development server on loopback)")
	ca := flag.String("ca", "", "PEM file of the CA that signed the server's certificate (default: the system's roots)")
	cert := flag.String("cert", "", "PEM client certificate for mutual TLS")
	key := flag.String("key", "", "PEM key of -cert")
	flag.Parse()

	opts := []client.Option{client.WithAgent("example-client", "1.0.0")}
	switch {
	case *plaintext:
		opts = append(opts, client.WithInsecure())
	case *ca != "":
		opts = append(opts, client.WithCAFile(*ca))
	}
	if *cert != "" {
		opts = append(opts, client.WithClientCertificateFiles(*cert, *key))
	}
	if tok := os.Getenv("TOOLSVC_TOKEN"); tok != "" {
		opts = append(opts, client.WithAPIKey(tok))
	}
	c, err := client.New(*addr, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := example(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// example makes the calls an internal service would.
func example(ctx context.Context, c *client.Client) error {
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	fmt.Printf("tools: %d visible\n", len(tools))

	added, err := c.Memory().AddMemory(ctx, &memoryv1.AddMemoryRequest{
		Content: "The billing service stores invoices in PostgreSQL.",
		Tags:    []string{"database"},
	})
	if err != nil {
		return fmt.Errorf("add-memory: %w", err)
	}
	fmt.Printf("add-memory: %s (idempotency key %s)\n", added.GetData().GetMemoryId(), added.GetMetadata().GetIdempotencyKey())

	found, err := c.CallTool(ctx, "search-memories", map[string]any{"query": "where are invoices stored"})
	if err != nil {
		return fmt.Errorf("search-memories: %w", err)
	}
	var data struct {
		Results []struct {
			MemoryID string  `json:"memoryId"`
			Content  string  `json:"content"`
			Score    float64 `json:"score"`
		} `json:"results"`
		TotalCount int `json:"totalCount"`
	}
	if err := found.Decode(&data); err != nil {
		return err
	}
	fmt.Printf("search-memories: %d found, confidence %.2f\n", len(data.Results), found.Hints.GetConfidence())

	_, err = c.Knowledge().ShowKnowledge(ctx, &knowledgev1.ShowKnowledgeRequest{Id: "adr-999-does-not-exist"})
	var e *client.Error
	switch {
	case client.IsNotFound(err) && errors.As(err, &e):
		next := ""
		if acts := e.Hints.GetSuggestedNextActions(); len(acts) > 0 {
			next = acts[0].GetAction()
		}
		fmt.Printf("show-knowledge: %s, retryable %v, next: %s\n", e.Code, e.Retryable, next)
	case err != nil:
		return fmt.Errorf("show-knowledge: %w", err)
	default:
		return errors.New("show-knowledge found an item that does not exist")
	}
	return nil
}
