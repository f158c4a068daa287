package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/base/jsonrpc"
	"github.com/toolsvc/toolsvc/internal/base/mcpclient"
	"github.com/toolsvc/toolsvc/internal/base/version"
	"github.com/toolsvc/toolsvc/internal/mcpbridge"
)

// probeTransports are the transports toolsvc probe tries, in order.
var probeTransports = []string{"mcp-2025", "mcp-2026", "rest", "grpc"}

// cmdProbe connects to a running toolsvc as each kind of client would —
// MCP 2025-11-25 (session), MCP 2026-07-28 (per request), REST and gRPC —
// lists the tools, calls one, and prints each step's time and what failed.
// The exit status is 0 when every step passed, 1 when one failed, 2 on a
// usage error: a script or a deployment check can act on it.
func cmdProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	grpcAddr := fs.String("grpc-addr", "", "gRPC address of the service, host:port (gRPC is not probed without it: the URL does not say where gRPC listens)")
	token := fs.String("token", os.Getenv("TOOLSVC_TOKEN"), "bearer token (API key or JWT); default $TOOLSVC_TOKEN")
	tool := fs.String("tool", "get-sync-status", "the tool to call on each transport")
	toolArgs := fs.String("args", "{}", "the call's arguments, a JSON object")
	only := fs.String("transports", strings.Join(probeTransports, ","), "transports to probe, comma-separated")
	timeout := fs.Duration("timeout", 10*time.Second, "time limit of each step")
	mcpPath := fs.String("mcp-path", "/mcp", "path of the MCP endpoint")
	useTLS := fs.Bool("tls", false, "call gRPC over TLS, trusting the system's CAs (implied by an https URL, -ca-file and -client-cert)")
	caFile := fs.String("ca-file", "", "PEM CA certificates to trust for the server's certificate (TLS)")
	clientCert := fs.String("client-cert", "", "PEM client certificate for mutual TLS (with -client-key)")
	clientKey := fs.String("client-key", "", "PEM private key of -client-cert")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolsvc probe [flags] URL   (URL: the HTTP address, e.g. http://127.0.0.1:8080)")
		fs.PrintDefaults()
	}
	// Flags may follow the URL, as in `toolsvc probe URL -token T`.
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "toolsvc probe: "+format+"\n", a...)
		return 2
	}
	if len(positional) != 1 {
		fs.Usage()
		return 2
	}
	base, err := url.Parse(strings.TrimRight(positional[0], "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return fail("%q is not an http:// or https:// URL", positional[0])
	}
	var callArgs map[string]any
	if err := json.Unmarshal([]byte(*toolArgs), &callArgs); err != nil || callArgs == nil {
		return fail("-args: want a JSON object, got %q", *toolArgs)
	}
	transports := strings.Split(*only, ",")
	for _, t := range transports {
		if !slices.Contains(probeTransports, t) {
			return fail("-transports: unknown transport %q (want some of %s)", t, strings.Join(probeTransports, ", "))
		}
	}
	// The URL does not say where gRPC listens: a guessed port probed
	// whatever answered there, another server included. Without
	// -grpc-addr gRPC is not probed, and asking for it is a usage error.
	if *grpcAddr == "" && slices.Contains(transports, "grpc") {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "transports" })
		if explicit {
			return fail("-transports names grpc: give -grpc-addr host:port (the URL does not say where gRPC listens)")
		}
		transports = slices.DeleteFunc(transports, func(t string) bool { return t == "grpc" })
	}
	creds, err := clientCredentials(*useTLS || base.Scheme == "https", *caFile, *clientCert, *clientKey)
	if err != nil {
		return fail("%v", err)
	}
	tlsConfig, err := clientTLSConfig(*caFile, *clientCert, *clientKey)
	if err != nil {
		return fail("%v", err)
	}
	p := &prober{
		base: base.String(), mcpPath: *mcpPath, token: *token, tool: *tool, args: callArgs,
		timeout: *timeout, out: stdout,
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}},
	}
	grpcNote := "gRPC " + *grpcAddr
	if *grpcAddr == "" {
		grpcNote = "gRPC not probed: give -grpc-addr"
	}
	fmt.Fprintf(stdout, "probe %s (%s), tool %s\n", p.base, grpcNote, p.tool)
	for _, t := range transports {
		switch t {
		case "mcp-2025":
			p.mcp2025(ctx)
		case "mcp-2026":
			p.mcp2026(ctx)
		case "rest":
			p.rest(ctx)
		case "grpc":
			conn, err := grpc.NewClient(*grpcAddr, grpc.WithTransportCredentials(creds))
			if err != nil {
				p.step("grpc", "connect", 0, err)
				continue
			}
			p.grpc(ctx, toolsvcv1.NewToolServiceClient(conn))
			_ = conn.Close()
		}
	}
	p.compare()
	if len(p.failed) > 0 {
		fmt.Fprintf(stdout, "FAIL: %d of %d steps failed: %s\n", len(p.failed), p.steps, strings.Join(p.failed, "; "))
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d steps passed\n", p.steps)
	return 0
}

// prober runs the steps and records what failed.
type prober struct {
	base, mcpPath, token, tool string
	args                       map[string]any
	timeout                    time.Duration
	http                       *http.Client
	out                        io.Writer

	steps  int
	failed []string
	// listed is the tool names each transport listed; broken the
	// transports that had a failed step.
	listed map[string][]string
	broken map[string]bool
}

// list records the tool names a transport listed.
func (p *prober) list(transport string, names []string) {
	if p.listed == nil {
		p.listed = map[string][]string{}
	}
	p.listed[transport] = slices.Sorted(slices.Values(names))
}

// compare says when the transports disagree: one failed where another
// passed, or they listed different tools to the same credential. Either
// usually means they did not reach the same server (a wrong -grpc-addr or
// -mcp-path, a proxy in front of one of them).
func (p *prober) compare() {
	var names []string
	for t := range p.listed {
		names = append(names, t)
	}
	slices.Sort(names)
	for i := 1; i < len(names); i++ {
		a, b := names[0], names[i]
		if !slices.Equal(p.listed[a], p.listed[b]) {
			msg := fmt.Sprintf("transports disagree: %s lists %d tools, %s %d (%s): are they the same server?",
				a, len(p.listed[a]), b, len(p.listed[b]), listDiff(a, p.listed[a], b, p.listed[b]))
			p.failed = append(p.failed, msg)
			fmt.Fprintln(p.out, msg)
		}
	}
	var passed, failed []string
	for _, t := range probeTransports {
		switch {
		case p.broken[t]:
			failed = append(failed, t)
		case p.listed[t] != nil:
			passed = append(passed, t)
		}
	}
	if len(passed) > 0 && len(failed) > 0 {
		fmt.Fprintf(p.out, "transports disagree: %s failed where %s passed: check that the URL, -mcp-path and -grpc-addr reach the same server\n",
			strings.Join(failed, ", "), strings.Join(passed, ", "))
	}
}

// listDiff names up to three tools that only list a has, then only b.
func listDiff(ta string, a []string, tb string, b []string) string {
	only := func(t string, x, y []string) string {
		var names []string
		for _, n := range x {
			if !slices.Contains(y, n) {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			return ""
		}
		if len(names) > 3 {
			names = append(names[:3], "...")
		}
		return "only " + t + ": " + strings.Join(names, " ")
	}
	return strings.Trim(only(ta, a, b)+"; "+only(tb, b, a), "; ")
}

// step prints one step's line and records a failure.
func (p *prober) step(transport, name string, took time.Duration, err error, detail ...string) bool {
	p.steps++
	ms := strconv.FormatFloat(float64(took.Microseconds())/1000, 'f', 1, 64) + "ms"
	if err != nil {
		if p.broken == nil {
			p.broken = map[string]bool{}
		}
		p.broken[transport] = true
		p.failed = append(p.failed, transport+" "+name+": "+err.Error())
		fmt.Fprintf(p.out, "%-9s %-16s %9s  FAILED: %v\n", transport, name, ms, err)
		return false
	}
	fmt.Fprintf(p.out, "%-9s %-16s %9s  %s\n", transport, name, ms, strings.Join(detail, ", "))
	return true
}

// timed runs f under the step's time limit and measures it.
func (p *prober) timed(ctx context.Context, f func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("no answer within %s", p.timeout)
	}
	return time.Since(start), err
}

// --- MCP ---

// mcpCall is one JSON-RPC request over Streamable HTTP.
type mcpCall struct {
	method   string
	params   map[string]any
	session  string // Mcp-Session-Id (2025)
	revision string // MCP-Protocol-Version header; "" on initialize
	name     string // Mcp-Name (2026 tools/call)
	modern   bool
	id       int
}

// do sends c and reads its answer (JSON or an event stream) with the same
// strict reader the bridge applies to clients. It returns the result, the
// session id the server gave, and an error for a transport or JSON-RPC
// failure.
func (p *prober) do(ctx context.Context, c mcpCall) (json.RawMessage, string, error) {
	msg := map[string]any{"jsonrpc": "2.0", "method": c.method}
	if c.params != nil {
		msg["params"] = c.params
	}
	if c.id > 0 {
		msg["id"] = c.id
	}
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, "", err
	}
	req, err := mcpclient.NewPost(ctx, p.base+p.mcpPath, body, c.session, c.revision)
	if err != nil {
		return nil, "", err
	}
	p.authorize(req.Header)
	if c.modern {
		mcpclient.SetMethod(req.Header, c.method, c.name)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	session := resp.Header.Get(mcpclient.HeaderSessionID)
	if c.id == 0 { // a notification: 202 and no body
		if resp.StatusCode != http.StatusAccepted {
			return nil, session, fmt.Errorf("HTTP %d to a notification (want 202)", resp.StatusCode)
		}
		return nil, session, nil
	}
	raw, err := readAnswer(resp, c.id)
	if err != nil {
		return nil, session, err
	}
	m, err := jsonrpc.Read(raw, jsonrpc.Answer)
	if err != nil {
		return nil, session, fmt.Errorf("the answer is not strict JSON-RPC: %w", err)
	}
	if re, err := m.ReadError(); err != nil {
		return nil, session, err
	} else if re != nil {
		return nil, session, fmt.Errorf("HTTP %d, JSON-RPC error %d: %s", resp.StatusCode, re.Code, re.Message)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, session, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return m.Result, session, nil
}

// readAnswer is the response message of request id: the JSON body, or the
// data of the event stream's message with that id.
func readAnswer(resp *http.Response, id int) ([]byte, error) {
	const limit = 16 << 20
	if !mcpclient.IsEventStream(resp) {
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, fmt.Errorf("HTTP %d with an empty body", resp.StatusCode)
		}
		return b, nil
	}
	want := []byte(`"id":` + strconv.Itoa(id))
	var answer []byte
	found, err := mcpclient.ReadEvents(resp.Body, limit, func(data []byte) bool {
		if bytes.Contains(data, want) {
			answer = bytes.Clone(data)
			return true
		}
		return false
	})
	if found {
		return answer, nil
	}
	if err != nil {
		return nil, err
	}
	return nil, errors.New("the event stream ended without the response")
}

func (p *prober) authorize(h http.Header) {
	if p.token != "" {
		h.Set("Authorization", "Bearer "+p.token)
	}
}

// modernMeta is the _meta every 2026-07-28 request carries.
func modernMeta() map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    mcpbridge.Revision20260728,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "toolsvc-probe", "version": version.Version},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}
}

func (p *prober) mcp2025(ctx context.Context) {
	const t = "mcp-2025"
	var session, revision string
	took, err := p.timed(ctx, func(ctx context.Context) error {
		res, sid, err := p.do(ctx, mcpCall{method: "initialize", id: 1, params: map[string]any{
			"protocolVersion": mcpbridge.Revision20251125, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "toolsvc-probe", "version": version.Version},
		}})
		if err != nil {
			return err
		}
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(res, &r); err != nil || r.ProtocolVersion == "" {
			return errors.New("the initialize result has no protocolVersion")
		}
		session, revision = sid, r.ProtocolVersion
		return nil
	})
	detail := "revision " + revision
	if session != "" {
		detail += ", session opened"
	}
	if !p.step(t, "initialize", took, err, detail) {
		return
	}
	call := func(c mcpCall) mcpCall { c.session, c.revision = session, revision; return c }
	took, err = p.timed(ctx, func(ctx context.Context) error {
		_, _, err := p.do(ctx, call(mcpCall{method: "notifications/initialized"}))
		return err
	})
	if !p.step(t, "initialized", took, err) {
		return
	}
	if p.mcpList(ctx, t, func(cursor string) mcpCall {
		c := call(mcpCall{method: "tools/list", id: 2})
		if cursor != "" {
			c.params = map[string]any{"cursor": cursor}
		}
		return c
	}) {
		p.mcpToolCall(ctx, t, call(mcpCall{method: "tools/call", id: 3, params: map[string]any{"name": p.tool, "arguments": p.args}}))
	}
	if session != "" {
		took, err = p.timed(ctx, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodDelete, p.base+p.mcpPath, nil)
			if err != nil {
				return err
			}
			p.authorize(req.Header)
			req.Header.Set(mcpbridge.HeaderSessionID, session)
			req.Header.Set(mcpbridge.HeaderProtocolVersion, revision)
			resp, err := p.http.Do(req)
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				return fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			return nil
		})
		p.step(t, "end session", took, err)
	}
}

func (p *prober) mcp2026(ctx context.Context) {
	const t = "mcp-2026"
	modern := func(method string, id int, params map[string]any) mcpCall {
		if params == nil {
			params = map[string]any{}
		}
		params["_meta"] = modernMeta()
		return mcpCall{method: method, id: id, params: params, revision: mcpbridge.Revision20260728, modern: true}
	}
	var versions []string
	took, err := p.timed(ctx, func(ctx context.Context) error {
		res, _, err := p.do(ctx, modern("server/discover", 1, nil))
		if err != nil {
			return err
		}
		var r struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return errors.New("the server/discover result does not decode")
		}
		if !slices.Contains(r.SupportedVersions, mcpbridge.Revision20260728) {
			return fmt.Errorf("the server does not list %s among %v", mcpbridge.Revision20260728, r.SupportedVersions)
		}
		versions = r.SupportedVersions
		return nil
	})
	if !p.step(t, "server/discover", took, err, "revisions "+strings.Join(versions, " ")) {
		return
	}
	if p.mcpList(ctx, t, func(cursor string) mcpCall {
		var params map[string]any
		if cursor != "" {
			params = map[string]any{"cursor": cursor}
		}
		return modern("tools/list", 2, params)
	}) {
		c := modern("tools/call", 3, map[string]any{"name": p.tool, "arguments": p.args})
		c.name = p.tool
		p.mcpToolCall(ctx, t, c)
	}
}

// mcpList pages through tools/list and checks the probed tool is listed.
func (p *prober) mcpList(ctx context.Context, t string, page func(cursor string) mcpCall) bool {
	var n int
	var found bool
	var names []string
	took, err := p.timed(ctx, func(ctx context.Context) error {
		cursor := ""
		for range 100 {
			res, _, err := p.do(ctx, page(cursor))
			if err != nil {
				return err
			}
			var r struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
				NextCursor string `json:"nextCursor"`
			}
			if err := json.Unmarshal(res, &r); err != nil {
				return errors.New("the tools/list result does not decode")
			}
			n += len(r.Tools)
			for _, x := range r.Tools {
				names = append(names, x.Name)
			}
			found = found || slices.ContainsFunc(r.Tools, func(x struct {
				Name string `json:"name"`
			}) bool {
				return x.Name == p.tool
			})
			if r.NextCursor == "" {
				return nil
			}
			cursor = r.NextCursor
		}
		return errors.New("more than 100 pages")
	})
	if err == nil {
		p.list(t, names)
	}
	if err == nil && !found {
		err = fmt.Errorf("%d tools listed, %s not among them (not served, or not permitted to this caller)", n, p.tool)
	}
	return p.step(t, "tools/list", took, err, strconv.Itoa(n)+" tools")
}

// mcpToolCall calls the tool; a result with isError is a failed step that
// names the ToolError's code and message.
func (p *prober) mcpToolCall(ctx context.Context, t string, c mcpCall) {
	took, err := p.timed(ctx, func(ctx context.Context) error {
		res, _, err := p.do(ctx, c)
		if err != nil {
			return err
		}
		var r struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"structuredContent"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			return errors.New("the tools/call result does not decode")
		}
		if r.IsError {
			return fmt.Errorf("the tool failed: %s: %s", r.StructuredContent.Code, r.StructuredContent.Message)
		}
		return nil
	})
	p.step(t, "tools/call", took, err, "ok")
}

// --- REST ---

func (p *prober) rest(ctx context.Context) {
	const t = "rest"
	var n int
	took, err := p.timed(ctx, func(ctx context.Context) error {
		var r struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := p.restDo(ctx, http.MethodGet, "/v1/tools?pageSize=1000", nil, &r); err != nil {
			return err
		}
		n = len(r.Tools)
		names := make([]string, n)
		for i, x := range r.Tools {
			names[i] = x.Name
		}
		p.list(t, names)
		if !slices.ContainsFunc(r.Tools, func(x struct {
			Name string `json:"name"`
		}) bool {
			return x.Name == p.tool
		}) {
			return fmt.Errorf("%d tools listed, %s not among them (not served, or not permitted to this caller)", n, p.tool)
		}
		return nil
	})
	if !p.step(t, "GET /v1/tools", took, err, strconv.Itoa(n)+" tools") {
		return
	}
	body, _ := json.Marshal(p.args)
	took, err = p.timed(ctx, func(ctx context.Context) error {
		return p.restDo(ctx, http.MethodPost, "/v1/tools/"+url.PathEscape(p.tool)+":call", body, nil)
	})
	p.step(t, "POST :call", took, err, "ok")
}

// restDo sends one REST request; an answer other than 200 is an error
// naming the ToolError's code and message.
func (p *prober) restDo(ctx context.Context, method, path string, body []byte, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	p.authorize(req.Header)
	resp, err := p.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error.Code != "" {
			return fmt.Errorf("HTTP %d, %s: %s", resp.StatusCode, e.Error.Code, e.Error.Message)
		}
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			return fmt.Errorf("the answer does not decode: %w", err)
		}
	}
	return nil
}

// --- gRPC ---

func (p *prober) grpc(ctx context.Context, client toolsvcv1.ToolServiceClient) {
	const t = "grpc"
	if p.token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+p.token)
	}
	var n int
	took, err := p.timed(ctx, func(ctx context.Context) error {
		resp, err := client.ListTools(ctx, &toolsvcv1.ListToolsRequest{PageSize: 1000})
		if err != nil {
			return grpcError(err)
		}
		n = len(resp.GetTools())
		names := make([]string, n)
		for i, d := range resp.GetTools() {
			names[i] = d.GetName()
		}
		p.list(t, names)
		if !slices.ContainsFunc(resp.GetTools(), func(d *toolsvcv1.ToolDefinition) bool { return d.GetName() == p.tool }) {
			return fmt.Errorf("%d tools listed, %s not among them (not served, or not permitted to this caller)", n, p.tool)
		}
		return nil
	})
	if !p.step(t, "ListTools", took, err, strconv.Itoa(n)+" tools") {
		return
	}
	args, err := structpb.NewStruct(p.args)
	if err != nil {
		p.step(t, "CallTool", 0, err)
		return
	}
	took, err = p.timed(ctx, func(ctx context.Context) error {
		_, err := client.CallTool(ctx, &toolsvcv1.CallToolRequest{Name: p.tool, Arguments: args})
		return grpcError(err)
	})
	p.step(t, "CallTool", took, err, "ok")
}

// grpcError names the ToolError of a failed call, or the status.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		if te, ok := d.(*toolsvcv1.ToolError); ok {
			return fmt.Errorf("%s: %s", te.GetCode(), te.GetMessage())
		}
	}
	return fmt.Errorf("%s: %s", st.Code(), st.Message())
}
