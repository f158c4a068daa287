package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// route is one REST operation of the generated OpenAPI document: what the
// gateway checks before grpc-gateway decodes the request.
type route struct {
	method string
	path   *regexp.Regexp
	// query holds the normalized names of the query parameters the
	// operation reads; any other query parameter is an unknown field.
	query map[string]string
}

// routeTable knows every /v1 operation, to answer unknown routes (404) and
// wrong methods (405, with Allow) and refuse unknown query parameters.
type routeTable struct{ routes []route }

var reTemplateVar = regexp.MustCompile(`\{[^}]+\}`)

// newRouteTable reads the operations of an OpenAPI 2.0 paths object.
func newRouteTable(paths map[string]any) (*routeTable, error) {
	t := &routeTable{}
	templates := make([]string, 0, len(paths))
	for p := range paths {
		templates = append(templates, p)
	}
	sort.Strings(templates)
	for _, tmpl := range templates {
		item, ok := paths[tmpl].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("openapi: path %s is not an object", tmpl)
		}
		literal := reTemplateVar.Split(tmpl, -1)
		for i := range literal {
			literal[i] = regexp.QuoteMeta(literal[i])
		}
		re, err := regexp.Compile("^" + strings.Join(literal, "[^/]+") + "$")
		if err != nil {
			return nil, fmt.Errorf("openapi: path %s: %w", tmpl, err)
		}
		for method, op := range item {
			m := strings.ToUpper(method)
			if !slices.Contains([]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}, m) {
				continue
			}
			r := route{method: m, path: re, query: map[string]string{}}
			opm, _ := op.(map[string]any)
			params, _ := opm["parameters"].([]any)
			for _, p := range params {
				pm, _ := p.(map[string]any)
				if pm["in"] == "query" {
					name, _ := pm["name"].(string)
					r.query[normalizeParam(name)] = name
				}
			}
			t.routes = append(t.routes, r)
		}
	}
	sort.SliceStable(t.routes, func(i, j int) bool { return t.routes[i].method < t.routes[j].method })
	return t, nil
}

// match returns the route of method and path, and whether any route has
// that path (with another method).
func (t *routeTable) match(method, path string) (*route, bool) {
	found := false
	for i := range t.routes {
		r := &t.routes[i]
		if !r.path.MatchString(path) {
			continue
		}
		if r.method == method {
			return r, true
		}
		found = true
	}
	return nil, found
}

// allowed lists the methods of path, sorted.
func (t *routeTable) allowed(path string) []string {
	var out []string
	for _, r := range t.routes {
		if r.path.MatchString(path) && !slices.Contains(out, r.method) {
			out = append(out, r.method)
		}
	}
	sort.Strings(out)
	return out
}

// unknownQuery returns the first query parameter (in sorted order) the
// route does not read, or "".
func (r *route) unknownQuery(q url.Values) string {
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, ok := r.query[normalizeParam(k)]; !ok {
			return k
		}
	}
	return ""
}

// normalizeParam makes proto names and JSON names of a (dotted) field path
// compare equal, as grpc-gateway accepts both: page.page_size and
// page.pageSize are the same parameter.
func normalizeParam(name string) string {
	return strings.ToLower(strings.ReplaceAll(name, "_", ""))
}
