package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// Path is where the console page is served; its assets are under Path + "/".
const Path = "/ui"

// ContentSecurityPolicy is sent with every console response: only the
// console's own scripts, styles and images, no inline script or style, calls
// to this origin only, and no framing.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed static
var static embed.FS

type asset struct {
	name        string
	data        []byte
	contentType string
	etag        string
}

// contentTypes are set explicitly so the answer does not depend on the
// host's MIME tables (a module script served as text/plain does not run).
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

// Handler returns the console: GET Path serves the page and GET Path/NAME
// its assets (Path/ and Path/index.html redirect to Path). Anything else
// under Path is 404. Every response carries ContentSecurityPolicy and
// revalidates with a strong ETag, so an upgraded binary is picked up at once.
// Mount it on both "GET /ui" and "GET /ui/".
func Handler() http.Handler {
	assets := loadAssets()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Referrer-Policy", "no-referrer")
		hdr.Set("X-Frame-Options", "DENY")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			hdr.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name, ok := assetName(r.URL.Path)
		if !ok {
			http.Redirect(w, r, Path, http.StatusMovedPermanently)
			return
		}
		a, found := assets[name]
		if !found {
			http.NotFound(w, r)
			return
		}
		hdr.Set("Content-Type", a.contentType)
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("ETag", a.etag)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.data))
	})
}

// assetName maps a request path to an asset name; ok is false for the
// aliases of the page that should redirect to Path.
func assetName(p string) (name string, ok bool) {
	switch p {
	case Path:
		return "index.html", true
	case Path + "/", Path + "/index.html":
		return "", false
	}
	rest, found := strings.CutPrefix(p, Path+"/")
	if !found || path.Clean("/"+rest) != "/"+rest {
		return "\x00", true // never an asset: 404
	}
	return rest, true
}

func loadAssets() map[string]asset {
	out := map[string]asset{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, known := contentTypes[path.Ext(p)]
		if !known {
			return nil // tests and notes next to the assets are not served
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		name := strings.TrimPrefix(p, "static/")
		out[name] = asset{name: name, data: data, contentType: ct, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return nil
	})
	if err != nil {
		panic("console: embedded assets unreadable: " + err.Error()) // impossible: embed.FS is built in
	}
	return out
}
