package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/toolsvc/toolsvc/internal/base/loopback"
	"github.com/toolsvc/toolsvc/internal/base/redact"
)

// Embedder turns texts into embedding vectors, one per text, in order. With
// one configured (WithEmbedder) search-memories and summarize-memories rank
// hybrid: vector similarity blended with full-text scores.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Calibrated is an Embedder that knows its model's similarity floor: the
// cosine similarity two unrelated texts reach with it (a static model's
// vectors all lean alike, so unrelated texts score well above 0; a
// converted GloVe model's floor is about 0.3, see model2vec.ConvertGloVe).
// Search rescales a similarity above the floor to 0..1 before scoring it
// (see Score), so that the score, and the default threshold, mean the same
// with every model: an unrelated memory scores about 0 by meaning, not
// the 0.5-0.8 its raw similarity would give it.
type Calibrated interface {
	SimilarityFloor() float64
}

// maxSimilarityFloor bounds the floor an embedder can claim: above it a
// model has too little room left to rank by meaning at all.
const maxSimilarityFloor = 0.9

// similarityFloor is e's floor (Calibrated), in [0, maxSimilarityFloor];
// 0 for an embedder that does not say.
func similarityFloor(e Embedder) float64 {
	c, ok := e.(Calibrated)
	if !ok {
		return 0
	}
	f := c.SimilarityFloor()
	if math.IsNaN(f) || f < 0 {
		return 0
	}
	return min(f, maxSimilarityFloor)
}

// calibrate rescales a cosine similarity above floor to 0..1: 0 at or
// below the floor, 1 for identical vectors.
func calibrate(cos, floor float64) float64 {
	if floor <= 0 {
		return cos
	}
	return clamp01((cos - floor) / (1 - floor))
}

// Defaults of HTTPEmbedderConfig.
const (
	DefaultEmbedTimeout      = 10 * time.Second
	DefaultEmbedMaxBodyBytes = 32 << 20
)

// HTTPEmbedderConfig configures an HTTPEmbedder.
type HTTPEmbedderConfig struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:8000"; requests
	// go to URL + "/v1/embeddings" ("/embeddings" when URL already ends in
	// "/v1"). It must be https, or http to a loopback host: embeddings
	// carry memory content, which must not cross a network in clear text.
	URL string
	// Model is sent as the request's "model".
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Timeout bounds one request; zero means DefaultEmbedTimeout.
	Timeout time.Duration
	// MaxBodyBytes bounds the response body; zero means
	// DefaultEmbedMaxBodyBytes.
	MaxBodyBytes int64
	// Client is the HTTP client; nil means a client with Timeout.
	Client *http.Client
}

// HTTPEmbedder calls an OpenAI-compatible POST /v1/embeddings endpoint,
// such as a local model server. It is safe for concurrent use.
type HTTPEmbedder struct {
	endpoint, model, apiKey string
	maxBody                 int64
	client                  *http.Client
}

// EmbedError reports a failed embeddings request: the endpoint answered
// with a non-2xx status (StatusCode set) or an unusable body, or could not
// be reached.
type EmbedError struct {
	// StatusCode is the HTTP status, 0 when there was no response.
	StatusCode int
	// Reason says what went wrong.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error implements error.
func (e *EmbedError) Error() string {
	msg := "embeddings: " + e.Reason
	if e.StatusCode != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.StatusCode)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *EmbedError) Unwrap() error { return e.Err }

// NewHTTPEmbedder validates cfg and returns an embedder. A URL that is not
// https and not http to a loopback host is refused.
func NewHTTPEmbedder(cfg HTTPEmbedderConfig) (*HTTPEmbedder, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("embeddings: invalid URL %q", redact.URL(cfg.URL))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback.Host(u.Hostname()) {
			return nil, fmt.Errorf("embeddings: %q: plain http is only allowed to a loopback host", redact.URL(cfg.URL))
		}
	default:
		return nil, fmt.Errorf("embeddings: %q: scheme must be https or http", redact.URL(cfg.URL))
	}
	if cfg.Model == "" {
		return nil, errors.New("embeddings: a model is required")
	}
	u.RawQuery, u.Fragment = "", ""
	path := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(path, "/v1/embeddings"):
	case strings.HasSuffix(path, "/v1"):
		path += "/embeddings"
	default:
		path += "/v1/embeddings"
	}
	u.Path = path
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultEmbedTimeout
	}
	maxBody := cfg.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultEmbedMaxBodyBytes
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	return &HTTPEmbedder{endpoint: u.String(), model: cfg.Model, apiKey: cfg.APIKey, maxBody: maxBody, client: client}, nil
}

type embedRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed implements Embedder with one request for all texts. Every text must
// get a vector and all vectors must share one dimension.
func (e *HTTPEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	body, err := json.Marshal(embedRequest{Model: e.model, Input: texts})
	if err != nil {
		return nil, &EmbedError{Reason: "encoding the request", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &EmbedError{Reason: "building the request", Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if e.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.apiKey)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// The client's error quotes the URL, user info included.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL)
		}
		return nil, &EmbedError{Reason: "request failed", Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, e.maxBody+1))
	if err != nil {
		return nil, &EmbedError{StatusCode: resp.StatusCode, Reason: "reading the response", Err: err}
	}
	if resp.StatusCode/100 != 2 {
		return nil, &EmbedError{StatusCode: resp.StatusCode, Reason: "the endpoint refused the request"}
	}
	if int64(len(data)) > e.maxBody {
		return nil, &EmbedError{StatusCode: resp.StatusCode, Reason: fmt.Sprintf("response larger than %d bytes", e.maxBody)}
	}
	var out embedResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &EmbedError{StatusCode: resp.StatusCode, Reason: "malformed response", Err: err}
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) || vecs[d.Index] != nil {
			return nil, &EmbedError{StatusCode: resp.StatusCode, Reason: fmt.Sprintf("bad or repeated index %d", d.Index)}
		}
		vecs[d.Index] = d.Embedding
	}
	for i, v := range vecs {
		if len(v) == 0 {
			return nil, &EmbedError{StatusCode: resp.StatusCode, Reason: fmt.Sprintf("no embedding for input %d", i)}
		}
		if len(v) != len(vecs[0]) {
			return nil, &EmbedError{StatusCode: resp.StatusCode, Reason: "embeddings of different dimensions"}
		}
	}
	return vecs, nil
}

// Name is the model name, recorded with the vectors the embedder makes.
func (e *HTTPEmbedder) Name() string { return e.model }
