package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// readBody reads the request body before anything decodes it: the media
// type must be JSON, the body at most maxBytes, sent within the body read
// timeout, and well-formed JSON. It returns the body ("" when there is
// none) and replaces r.Body with it, or an *apiError.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		if err := checkMediaType(r.Header.Get("Content-Type"), false); err != nil {
			return nil, err
		}
		r.Body = http.NoBody
		return nil, nil
	}
	if err := checkMediaType(r.Header.Get("Content-Type"), true); err != nil {
		return nil, err
	}
	limit := g.cfg.MaxRequestBytes
	if r.ContentLength > int64(limit) {
		return nil, tooLarge(limit)
	}
	rc := http.NewResponseController(w)
	// Not every ResponseWriter supports deadlines (e.g. wrapped ones); the
	// server's own timeouts still apply then.
	if err := rc.SetReadDeadline(time.Now().Add(g.cfg.BodyReadTimeout)); err == nil {
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &apiError{status: http.StatusRequestTimeout, te: &toolsvcv1.ToolError{
			Code:    string(toolerr.Timeout),
			Message: fmt.Sprintf("the request body was not received within %s", g.cfg.BodyReadTimeout),
		}}
	case err != nil:
		return nil, invalid(http.StatusBadRequest, "", "", "the request body could not be read")
	case len(body) > limit:
		return nil, tooLarge(limit)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if len(body) == 0 {
		return nil, nil
	}
	if err := checkJSON(body); err != nil {
		return nil, err
	}
	return body, nil
}

func tooLarge(limit int) *apiError {
	e := invalid(http.StatusRequestEntityTooLarge, "", "", "the request body exceeds the limit of %d bytes", limit)
	e.te.Details = mustStruct(map[string]any{"limitBytes": limit})
	return e
}

// checkMediaType accepts application/json, with no parameter but
// charset=utf-8. An empty type is accepted only without a body.
func checkMediaType(contentType string, hasBody bool) error {
	if contentType == "" && !hasBody {
		return nil
	}
	mt, params, err := mime.ParseMediaType(contentType)
	ok := err == nil && mt == "application/json"
	for k, v := range params {
		if k != "charset" || !strings.EqualFold(v, "utf-8") {
			ok = false
		}
	}
	if ok {
		return nil
	}
	shown := contentType
	if shown == "" {
		shown = "none"
	}
	e := invalid(http.StatusUnsupportedMediaType, "", "",
		"unsupported media type %q: send the body as application/json (charset utf-8)", shown)
	e.te.Details = mustStruct(map[string]any{"contentType": contentType, "accepted": []any{"application/json", "application/json; charset=utf-8"}})
	return e
}

// checkJSON refuses a body that is not one well-formed JSON value, saying
// where it breaks (grpc-gateway would read the first value and ignore the
// rest).
func checkJSON(body []byte) error {
	var raw json.RawMessage
	err := json.Unmarshal(body, &raw)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return invalid(http.StatusBadRequest, "", "", "malformed JSON at byte %d: %s", se.Offset, se.Error())
	}
	return invalid(http.StatusBadRequest, "", "", "malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}
