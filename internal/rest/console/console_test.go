package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/rest/console"
)

// newServer mounts the console the way internal/server does.
func newServer(tb testing.TB) *httptest.Server {
	tb.Helper()
	mux := http.NewServeMux()
	h := console.Handler()
	mux.Handle("GET "+console.Path, h)
	mux.Handle("GET "+console.Path+"/", h)
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv
}

func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func TestHandlerServesPageAndAssets(t *testing.T) {
	srv := newServer(t)
	client := &http.Client{CheckRedirect: noRedirects}
	tests := []struct {
		name        string
		method      string
		path        string
		wantStatus  int
		wantType    string
		wantBody    string
		wantHeaders map[string]string
	}{
		{name: "page", method: http.MethodGet, path: "/ui", wantStatus: http.StatusOK, wantType: "text/html; charset=utf-8", wantBody: `<script type="module" src="/ui/app.js">`},
		{name: "page HEAD", method: http.MethodHead, path: "/ui", wantStatus: http.StatusOK, wantType: "text/html; charset=utf-8"},
		{name: "module", method: http.MethodGet, path: "/ui/app.js", wantStatus: http.StatusOK, wantType: "text/javascript; charset=utf-8", wantBody: "import "},
		{name: "form generator", method: http.MethodGet, path: "/ui/schemaform.js", wantStatus: http.StatusOK, wantType: "text/javascript; charset=utf-8", wantBody: "export const HANDLED_KEYWORDS"},
		{name: "stylesheet", method: http.MethodGet, path: "/ui/style.css", wantStatus: http.StatusOK, wantType: "text/css; charset=utf-8"},
		{name: "icon", method: http.MethodGet, path: "/ui/favicon.svg", wantStatus: http.StatusOK, wantType: "image/svg+xml"},
		{name: "trailing slash redirects", method: http.MethodGet, path: "/ui/", wantStatus: http.StatusMovedPermanently, wantHeaders: map[string]string{"Location": "/ui"}},
		{name: "index.html redirects", method: http.MethodGet, path: "/ui/index.html", wantStatus: http.StatusMovedPermanently, wantHeaders: map[string]string{"Location": "/ui"}},
		{name: "unknown asset", method: http.MethodGet, path: "/ui/nope.js", wantStatus: http.StatusNotFound},
		{name: "directory", method: http.MethodGet, path: "/ui/static/", wantStatus: http.StatusNotFound},
		{name: "encoded traversal", method: http.MethodGet, path: "/ui/..%2fconsole.go", wantStatus: http.StatusNotFound},
		{name: "unclean path", method: http.MethodGet, path: "/ui/./app.js", wantStatus: http.StatusTemporaryRedirect, wantHeaders: map[string]string{"Location": "/ui/app.js"}},
		{name: "POST is refused", method: http.MethodPost, path: "/ui", wantStatus: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %q)", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantType != "" && resp.Header.Get("Content-Type") != tt.wantType {
				t.Errorf("Content-Type = %q, want %q", resp.Header.Get("Content-Type"), tt.wantType)
			}
			if !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("body does not contain %q", tt.wantBody)
			}
			for k, v := range tt.wantHeaders {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if resp.StatusCode == http.StatusOK {
				for k, v := range map[string]string{
					"Content-Security-Policy": console.ContentSecurityPolicy,
					"X-Content-Type-Options":  "nosniff",
					"Cache-Control":           "no-cache",
				} {
					if got := resp.Header.Get(k); got != v {
						t.Errorf("%s = %q, want %q", k, got, v)
					}
				}
			}
		})
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	srv := newServer(t)
	resp, err := http.Get(srv.URL + "/ui/app.js")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) {
		t.Fatalf("ETag = %q, want a strong hex tag", etag)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/ui/app.js", nil)
	req.Header.Set("If-None-Match", etag)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET status = %d, want 304", resp.StatusCode)
	}
}

func TestPolicyForbidsInlineAndExternalCode(t *testing.T) {
	for _, directive := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(console.ContentSecurityPolicy, directive) {
			t.Errorf("policy lacks %q", directive)
		}
	}
	if strings.Contains(console.ContentSecurityPolicy, "unsafe-") {
		t.Errorf("policy allows unsafe sources: %s", console.ContentSecurityPolicy)
	}
}

// staticFiles returns the console's source files by name.
func staticFiles(tb testing.TB) map[string]string {
	tb.Helper()
	out := map[string]string{}
	err := fs.WalkDir(os.DirFS("static"), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(filepath.Join("static", p))
		out[p] = string(b)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

var (
	scriptTag   = regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	inlineAttrs = regexp.MustCompile(`(?i)\s(on[a-z]+|style)\s*=`)
	externalURL = regexp.MustCompile(`(?i)(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}[/"']`)
	importFrom  = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'`)
	assetRef    = regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`)
)

// TestAssetsLoadUnderThePolicy checks statically what the policy would
// block at run time: inline script, inline handlers and style attributes,
// external URLs, and module imports or page references to files that are
// not embedded.
func TestAssetsLoadUnderThePolicy(t *testing.T) {
	files := staticFiles(t)
	srv := newServer(t)
	for name, text := range files {
		t.Run(name, func(t *testing.T) {
			for _, m := range scriptTag.FindAllStringSubmatch(text, -1) {
				if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
					t.Errorf("inline script: %s", m[0])
				}
			}
			if strings.HasSuffix(name, ".html") {
				if m := inlineAttrs.FindString(text); m != "" {
					t.Errorf("inline handler or style attribute %q", m)
				}
			}
			for _, m := range externalURL.FindAllString(text, -1) {
				if !strings.Contains(m, "www.w3.org/") && !strings.Contains(m, "json-schema.org/") {
					t.Errorf("reference to an external URL %q", m)
				}
			}
			if strings.Contains(text, "innerHTML") || strings.Contains(text, "insertAdjacentHTML") || strings.Contains(text, "document.write") {
				t.Errorf("builds markup from strings")
			}
			if strings.Contains(text, "console.log") {
				t.Errorf("logs to the browser console (the key must never be logged)")
			}
			var refs []string
			for _, m := range importFrom.FindAllStringSubmatch(text, -1) {
				refs = append(refs, "/ui/"+strings.TrimPrefix(m[1]+m[2], "./"))
			}
			for _, m := range assetRef.FindAllStringSubmatch(text, -1) {
				refs = append(refs, m[1])
			}
			for _, ref := range refs {
				resp, err := http.Get(srv.URL + ref)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s refers to %s: status %d", name, ref, resp.StatusCode)
				}
			}
		})
	}
	if len(files) < 7 {
		t.Fatalf("only %d static files found", len(files))
	}
}
