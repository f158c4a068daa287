package drivers

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"time"
)

// NewHTTPClient returns a client whose pool keeps a connection per worker,
// so the client never queues requests behind its own connection limit.
func NewHTTPClient(concurrency int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = concurrency * 2
	t.MaxIdleConnsPerHost = concurrency * 2
	t.IdleConnTimeout = 30 * time.Second
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}

// REST sends one HTTP request per call: method on url with the bodies in
// rotation (nil bodies for GET).
type REST struct {
	client *http.Client
	method string
	url    string
	bodies *Rotation[[]byte]
	keys   *Rotation[string]
}

// NewREST builds a REST driver after checking that url is loopback.
func NewREST(client *http.Client, method, url string, bodies [][]byte, keys []string) (*REST, error) {
	if err := CheckLoopback(url); err != nil {
		return nil, err
	}
	return &REST{client: client, method: method, url: url, bodies: NewRotation(bodies), keys: NewRotation(keys)}, nil
}

// Call returns "" for a 2xx answer, the status code otherwise, or
// "transport" when no answer came.
func (r *REST) Call(ctx context.Context, _ int) string {
	var body io.Reader
	if b := r.bodies.Next(); b != nil {
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, body)
	if err != nil {
		return "request"
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if k := r.keys.Next(); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return transportCode(ctx)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	return ""
}

func transportCode(ctx context.Context) string {
	if ctx.Err() != nil {
		return "deadline"
	}
	return "transport"
}
