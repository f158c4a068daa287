package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// explainAnswer is the body of GET /v1/policy/explain (docs/OPERATIONS.md,
// "Explain").
type explainAnswer struct {
	Callers []struct {
		Caller struct {
			Entry       string   `json:"entry"`
			Subject     string   `json:"subject"`
			Tenant      string   `json:"tenant"`
			Method      string   `json:"method"`
			Roles       []string `json:"roles"`
			Permissions []string `json:"permissions"`
			ToolSets    []string `json:"toolSets"`
			View        []string `json:"view"`
			ReadOnly    bool     `json:"readOnly"`
		} `json:"caller"`
		Tool *struct {
			Tool      string   `json:"tool"`
			Version   string   `json:"version"`
			Allowed   bool     `json:"allowed"`
			Rule      string   `json:"rule"`
			Reason    string   `json:"reason"`
			Code      string   `json:"code"`
			GrantedBy []string `json:"grantedBy"`
		} `json:"tool"`
		Sees []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"sees"`
		Budgets []struct {
			Name      string `json:"name"`
			Limit     int64  `json:"limit"`
			Remaining int64  `json:"remaining"`
			Window    string `json:"window"`
			Refuses   bool   `json:"refuses"`
		} `json:"budgets"`
	} `json:"callers"`
}

// cmdExplain asks a running toolsvc, with a credential holding
// policy:read, whether a caller may call a tool and which rule refuses it,
// and what the caller sees. The exit status is 0 when every caller may
// call the tool (or no tool was asked about), 1 when a rule refuses one,
// 2 on a usage error or when the server could not answer.
func cmdExplain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	token := fs.String("token", os.Getenv("TOOLSVC_TOKEN"), "bearer token holding policy:read; default $TOOLSVC_TOKEN")
	subject := fs.String("subject", "", "the caller: the subject of API key or client certificate entries of the auth file")
	tenant := fs.String("tenant", "", "the caller as a JWT describes it: its tenant (with -permissions and -roles)")
	perms := fs.String("permissions", "", "the JWT caller's permissions, comma-separated")
	roles := fs.String("roles", "", "the JWT caller's roles (its roles_claim), comma-separated")
	tool := fs.String("tool", "", "the tool to ask about (empty: only what the caller sees)")
	version := fs.String("version", "", "the tool's version or pin")
	toolSet := fs.String("tool-set", "", "answer as a call in this tool set (x-toolsvc-tool-set, /mcp/sets/{set})")
	asJSON := fs.Bool("json", false, "print the server's JSON answer")
	timeout := fs.Duration("timeout", 10*time.Second, "time limit of the request")
	caFile := fs.String("ca-file", "", "PEM CA certificates to trust for the server's certificate (TLS)")
	clientCert := fs.String("client-cert", "", "PEM client certificate for mutual TLS (with -client-key)")
	clientKey := fs.String("client-key", "", "PEM private key of -client-cert")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: toolsvc explain [flags] URL   (URL: the HTTP address, e.g. http://127.0.0.1:8080)")
		fs.PrintDefaults()
	}
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
		fmt.Fprintf(stderr, "toolsvc explain: "+format+"\n", a...)
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
	q := url.Values{}
	for k, v := range map[string]string{"subject": *subject, "tenant": *tenant, "permissions": *perms, "roles": *roles,
		"tool": *tool, "version": *version, "tool_set": *toolSet} {
		if v != "" {
			q.Set(k, v)
		}
	}
	tlsConfig, err := clientTLSConfig(*caFile, *clientCert, *clientKey)
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base.String()+"/v1/policy/explain?"+q.Encode(), nil)
	if err != nil {
		return fail("%v", err)
	}
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	resp, err := client.Do(req)
	if err != nil {
		return fail("%v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fail("reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		var te struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &te)
		return fail("HTTP %d %s: %s", resp.StatusCode, te.Code, te.Message)
	}
	if *asJSON {
		_, _ = stdout.Write(body)
		fmt.Fprintln(stdout)
	}
	var ans explainAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return fail("the answer is not explain's JSON: %v", err)
	}
	code := 0
	for _, c := range ans.Callers {
		if c.Tool != nil && !c.Tool.Allowed {
			code = 1
		}
		if *asJSON {
			continue
		}
		k := c.Caller
		fmt.Fprintf(stdout, "caller %s: subject %q, tenant %q, %s\n", k.Entry, k.Subject, k.Tenant, k.Method)
		fmt.Fprintf(stdout, "  roles:       %s\n", orNone(k.Roles))
		fmt.Fprintf(stdout, "  permissions: %s\n", orNone(k.Permissions))
		fmt.Fprintf(stdout, "  tool sets:   bound to %s; sees %s\n", orNone(k.ToolSets), orEvery(k.View))
		if t := c.Tool; t != nil {
			name := t.Tool
			if t.Version != "" {
				name += " " + t.Version
			}
			if t.Allowed {
				fmt.Fprintf(stdout, "  %s: ALLOWED\n", name)
			} else {
				fmt.Fprintf(stdout, "  %s: REFUSED by rule %s (%s): %s\n", name, t.Rule, t.Code, t.Reason)
				if len(t.GrantedBy) > 0 {
					fmt.Fprintf(stdout, "    granted by the roles %s\n", strings.Join(t.GrantedBy, ", "))
				}
			}
		}
		names := make([]string, len(c.Sees))
		for i, s := range c.Sees {
			names[i] = s.Name + " " + s.Version
		}
		fmt.Fprintf(stdout, "  sees %d tool(s): %s\n", len(names), orNone(names))
		for _, b := range c.Budgets {
			fmt.Fprintf(stdout, "  budget %s: %d of %d left per %s (refuses: %v)\n", b.Name, b.Remaining, b.Limit, b.Window, b.Refuses)
		}
	}
	return code
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func orEvery(s []string) string {
	if len(s) == 0 {
		return "every tool"
	}
	return "the sets " + strings.Join(s, ", ")
}
