package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/toolsvc/toolsvc/internal/tests/support/testserver"
)

// REST calls tools through POST /v1/tools/{name}:call on the HTTP listener,
// as a script or browser would.
type REST struct {
	S *testserver.Server
	// Client sends the requests; default http.DefaultClient.
	Client *http.Client
	// Version pins every call (?version=); "" for none.
	Version string
}

// Name implements Transport.
func (REST) Name() string { return "rest" }

// Call implements Transport.
func (r REST) Call(ctx context.Context, token, tool string, args map[string]any, headers map[string]string) (Outcome, error) {
	body, err := json.Marshal(args)
	if err != nil {
		return Outcome{}, err
	}
	target := r.S.HTTP + "/v1/tools/" + url.PathEscape(tool) + ":call"
	if r.Version != "" {
		target += "?version=" + url.QueryEscape(r.Version)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Outcome{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := httpClient(r.Client).Do(req)
	if err != nil {
		return Outcome{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return Outcome{}, err
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return Outcome{}, fmt.Errorf("HTTP %d: body is not JSON: %q", resp.StatusCode, raw)
	}
	if resp.StatusCode == http.StatusOK {
		return Outcome{Code: "OK", Result: out}, nil
	}
	e, _ := out["error"].(map[string]any)
	code, _ := e["code"].(string)
	if err := seedEnvelope(raw, e); err != nil {
		return Outcome{}, err
	}
	if want := httpStatus[code]; want != resp.StatusCode {
		return Outcome{}, fmt.Errorf("code %s came with HTTP %d, want %d", code, resp.StatusCode, want)
	}
	if code == "UNAUTHORIZED" && resp.Header.Get("WWW-Authenticate") == "" {
		return Outcome{}, fmt.Errorf("401 without WWW-Authenticate")
	}
	if code == "RATE_LIMITED" && resp.Header.Get("Retry-After") == "" {
		return Outcome{}, fmt.Errorf("429 without Retry-After")
	}
	return Outcome{Code: code, Error: e}, nil
}

// httpStatus is docs/ARCHITECTURE.md's error table.
var httpStatus = map[string]int{
	"INVALID_INPUT": 400, "UNAUTHORIZED": 401, "FORBIDDEN": 403, "NOT_FOUND": 404, "CONFLICT": 409,
	"RATE_LIMITED": 429, "TIMEOUT": 504, "PROVIDER_ERROR": 503, "INTERNAL": 500,
}

// httpClient is c, or http.DefaultClient when c is nil.
func httpClient(c *http.Client) *http.Client {
	if c == nil {
		return http.DefaultClient
	}
	return c
}

// seedEnvelope checks that an error body reads as the REST error envelope (docs/REST.md, Errors)
// {success: false, errorCode, message, details, retryable}, the same facts
// as the ToolError under error.
func seedEnvelope(raw []byte, te map[string]any) error {
	var env struct {
		Success   *bool          `json:"success"`
		ErrorCode string         `json:"errorCode"`
		Message   string         `json:"message"`
		Details   map[string]any `json:"details"`
		Retryable *bool          `json:"retryable"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("error body is not the error envelope: %w", err)
	}
	switch {
	case env.Success == nil || *env.Success:
		return fmt.Errorf("error body without success: false: %s", raw)
	case env.ErrorCode == "" || env.ErrorCode != te["code"] || env.Message != te["message"]:
		return fmt.Errorf("error envelope %q/%q disagrees with the ToolError: %s", env.ErrorCode, env.Message, raw)
	case env.Details == nil || env.Retryable == nil || *env.Retryable != te["retryable"]:
		return fmt.Errorf("error envelope without details or retryable, or disagreeing: %s", raw)
	}
	return nil
}
