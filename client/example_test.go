package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolsvc/toolsvc/client"
	memoryv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/memory/v1"
)

// A service connects once, with TLS and its API key, and shares the client.
func ExampleNew() {
	c, err := client.New("toolsvc.internal:9090",
		client.WithCAFile("/etc/toolsvc/ca.pem"),
		client.WithAPIKey(os.Getenv("TOOLSVC_API_KEY")),
		client.WithAgent("billing", "2.3.0"),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// A typed call: add-memory has side effects, so the client adds an
	// idempotency key and retries a retryable failure with the same key.
	resp, err := c.Memory().AddMemory(context.Background(), &memoryv1.AddMemoryRequest{
		Content: "The billing service stores invoices in PostgreSQL.",
	})
	if err != nil {
		log.Print(err)
		return
	}
	fmt.Println(resp.GetData().GetMemoryId())
}

// Mutual TLS: the client certificate is the credential.
func ExampleWithClientCertificateFiles() {
	c, err := client.New("toolsvc.internal:9090",
		client.WithCAFile("/etc/toolsvc/ca.pem"),
		client.WithClientCertificateFiles("/etc/billing/tls.crt", "/etc/billing/tls.key"),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// A JWT that expires is fetched again by the client a minute before it
// does, and when the server refuses it.
func ExampleWithTokenSource() {
	fetch := func(context.Context) (string, time.Time, error) { return "eyJ...", time.Now().Add(time.Hour), nil }
	c, err := client.New("toolsvc.internal:9090",
		client.WithTokenSource(client.TokenSourceFunc(func(ctx context.Context) (client.Token, error) {
			tok, exp, err := fetch(ctx)
			return client.Token{Value: tok, Expiry: exp}, err
		})),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
}

// Any tool, upstream ones included, by name; the data decodes into a
// struct of the tool's output fields.
func ExampleClient_CallTool() {
	c, err := client.New("127.0.0.1:9090", client.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.CallTool(context.Background(), "create-ticket", map[string]any{"title": "Export button fails", "priority": "high"})
	if err != nil {
		log.Print(err)
		return
	}
	var data struct {
		Ticket struct{ ID string } `json:"ticket"`
	}
	if err := res.Decode(&data); err != nil {
		log.Print(err)
		return
	}
	fmt.Println(data.Ticket.ID, res.Metadata.GetTraceId(), res.Hints.GetConfidence())
}

// A write that must run once across restarts of the caller carries a key
// of the caller's choosing.
func ExampleWithIdempotencyKey() {
	c, err := client.New("127.0.0.1:9090", client.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := client.WithIdempotencyKey(context.Background(), "invoice-2026-0042-note")
	if _, err := c.CallTool(ctx, "add-memory", map[string]any{"content": "Invoice 2026-0042 was disputed."}); err != nil {
		log.Print(err)
		return
	}
}

// Every failure is an *Error with the server's ToolError.
func ExampleError() {
	c, err := client.New("127.0.0.1:9090", client.WithInsecure())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.CallTool(context.Background(), "add-memory", map[string]any{"content": ""})
	var e *client.Error
	if errors.As(err, &e) && e.Code == client.CodeInvalidInput {
		for _, v := range e.FieldViolations {
			fmt.Printf("fix %s: %s (%s)\n", v.GetField(), v.GetMessage(), v.GetRule())
		}
	}
}

// CodeOf reads the code of any error a call returned, a bare gRPC status
// included.
func ExampleCodeOf() {
	fmt.Println(client.CodeOf(status.Error(codes.ResourceExhausted, "slow down")))
	fmt.Println(client.IsNotFound(status.Error(codes.NotFound, "no such tool")))
	fmt.Println(client.CodeOf(nil) == "")
	// Output:
	// RATE_LIMITED
	// true
	// true
}
