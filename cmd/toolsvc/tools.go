package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

var compactJSON = protojson.MarshalOptions{EmitDefaultValues: true}

// pretty renders m indented by two spaces, the same in every build:
// protojson's own multi-line form adds a second space after a colon in some
// builds and not in others (on purpose), so json.Indent lays it out.
func pretty(m proto.Message) []byte {
	b, err := compactJSON.Marshal(m)
	if err != nil {
		return []byte(err.Error())
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return b
	}
	return out.Bytes()
}

// cmdTools is a small gRPC client: list the tools the caller may call, or
// call one with JSON arguments.
func cmdTools(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9090", "gRPC address of a running toolsvc")
	token := fs.String("token", os.Getenv("TOOLSVC_TOKEN"), "bearer token (API key or JWT); default $TOOLSVC_TOKEN")
	useTLS := fs.Bool("tls", false, "call over TLS, trusting the system's CAs (implied by -ca-file and -client-cert)")
	caFile := fs.String("ca-file", "", "PEM CA certificates to trust for the server's certificate (TLS)")
	clientCert := fs.String("client-cert", "", "PEM client certificate for mutual TLS (with -client-key)")
	clientKey := fs.String("client-key", "", "PEM private key of -client-cert")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 || (rest[0] == "call" && len(rest) < 2) || (rest[0] != "list" && rest[0] != "call") {
		fmt.Fprintln(stderr, "usage: toolsvc tools [-addr A] [-token T] [-ca-file F] [-client-cert F -client-key F] list | call NAME [JSON]")
		return 2
	}
	creds, err := clientCredentials(*useTLS, *caFile, *clientCert, *clientKey)
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc tools: %v\n", err)
		return 2
	}
	conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		fmt.Fprintf(stderr, "toolsvc tools: %v\n", err)
		return 1
	}
	defer conn.Close()
	if *token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+*token)
	}
	client := toolsvcv1.NewToolServiceClient(conn)
	switch rest[0] {
	case "list":
		resp, err := client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1000})
		if err != nil {
			return fail(stderr, err)
		}
		for _, t := range resp.GetTools() {
			fmt.Fprintf(stdout, "%-22s %-7s %-10s %s\n", t.GetName(), t.GetVersion(), t.GetCategory(), t.GetTitle())
		}
		return 0
	default:
		req := &toolsvcv1.CallToolRequest{Name: rest[1], Arguments: &structpb.Struct{}}
		if len(rest) > 2 {
			if err := protojson.Unmarshal([]byte(rest[2]), req.Arguments); err != nil {
				fmt.Fprintf(stderr, "toolsvc tools: arguments are not a JSON object: %v\n", err)
				return 2
			}
		}
		resp, err := client.CallTool(ctx, req)
		if err != nil {
			return fail(stderr, err)
		}
		b := pretty(resp)
		fmt.Fprintln(stdout, string(b))
		return 0
	}
}

// clientCredentials are the transport credentials of the tools client:
// plaintext unless TLS is asked for, trusting caFile (else the system's
// CAs), presenting the client certificate when one is given.
func clientCredentials(useTLS bool, caFile, certFile, keyFile string) (credentials.TransportCredentials, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("-client-cert and -client-key go together")
	}
	if !useTLS && caFile == "" && certFile == "" {
		return insecure.NewCredentials(), nil
	}
	cfg, err := clientTLSConfig(caFile, certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(cfg), nil
}

// clientTLSConfig trusts caFile (else the system's CAs) and presents the
// client certificate when one is given.
func clientTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("-client-cert and -client-key go together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate in it", caFile)
		}
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func fail(stderr io.Writer, err error) int {
	st, _ := status.FromError(err)
	b := pretty(toolerr.FromStatus(st))
	fmt.Fprintf(stderr, "%s\n", b)
	return 1
}
