package registry

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/reflect/protoreflect"

	toolsvcv1 "github.com/toolsvc/toolsvc/gen/go/toolsvc/v1"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
)

// Get returns the version of the tool called name that answers pin, the
// rule every transport pins a version by (docs/CONTRACTS.md, "Calling a
// version"):
//
//   - "" is the highest version served;
//   - "MAJOR.MINOR.PATCH" is the highest version served with that major and
//     at least that minor and patch, since a minor or patch version is
//     backward compatible ("Versions"): a caller that pinned 1.0.0 keeps
//     working when 1.1.0 replaces it, and is answered by 1.1.0 when both
//     are served;
//   - "=MAJOR.MINOR.PATCH" is exactly that version, for a caller that must
//     stay on an older version served side by side (a deprecated one
//     included).
//
// A tool that does not exist is toolerr.UnknownTool; a pin that is not one
// of the forms above is INVALID_INPUT on the field "version"; a pin no
// version served answers is NOT_FOUND naming the versions served and how
// to pin one exactly.
func (r *Registry) Get(name, pin string) (*Tool, error) {
	versions := r.byName[name]
	if len(versions) == 0 {
		return nil, toolerr.UnknownTool(name)
	}
	if pin == "" {
		return versions[len(versions)-1], nil
	}
	want, exact, ok := parsePin(pin)
	if !ok {
		return nil, toolerr.Invalid("version", "string.version_pin",
			`must be a version pin: MAJOR.MINOR.PATCH for the highest compatible version served, e.g. "1.2.0", or =MAJOR.MINOR.PATCH for exactly that version, e.g. "=1.2.0"; got %q`, pin)
	}
	for i := len(versions) - 1; i >= 0; i-- {
		t := versions[i]
		if answers(t.semver, want, exact) {
			return t, nil
		}
	}
	known := make([]any, 0, len(versions))
	served := make([]string, 0, len(versions))
	for _, t := range versions {
		known = append(known, t.Version)
		served = append(served, t.Version)
	}
	details := map[string]any{"tool": name, "version": pin, "versions": known}
	if exact {
		return nil, toolerr.New(toolerr.NotFound,
			"tool %q has no version %s; versions served: %s; pin %q, without \"=\", for the highest compatible version, or one exactly as \"=%s\"",
			name, pin, strings.Join(served, ", "), pin[1:], served[len(served)-1]).WithDetails(details)
	}
	return nil, toolerr.New(toolerr.NotFound,
		"tool %q serves no version compatible with %s (the same major version, at least as high); versions served: %s; pin one exactly as \"=%s\"",
		name, pin, strings.Join(served, ", "), served[len(served)-1]).WithDetails(details)
}

// ByMethod returns the tool served by a full gRPC method name.
func (r *Registry) ByMethod(fullMethod string) (*Tool, bool) {
	t, ok := r.byMethod[fullMethod]
	return t, ok
}

// All returns every tool version, by name then ascending version.
func (r *Registry) All() []*Tool { return r.all }

// Latest returns the highest version of every tool, by name.
func (r *Registry) Latest() []*Tool {
	out := make([]*Tool, 0, len(r.byName))
	for _, t := range r.all {
		vs := r.byName[t.Name]
		if vs[len(vs)-1] == t {
			out = append(out, t)
		}
	}
	return out
}

// Versions returns every version of name, ascending.
func (r *Registry) Versions(name string) []*Tool { return r.byName[name] }

// ByCategory returns the latest version of every tool in category.
func (r *Registry) ByCategory(category string) []*Tool {
	return r.filter(func(t *Tool) bool { return t.Spec.GetCategory() == category })
}

// ByTag returns the latest version of every tool tagged tag.
func (r *Registry) ByTag(tag string) []*Tool {
	return r.filter(func(t *Tool) bool {
		for _, tg := range t.Spec.GetTags() {
			if tg == tag {
				return true
			}
		}
		return false
	})
}

// Len is the number of tool versions.
func (r *Registry) Len() int { return len(r.all) }

func (r *Registry) filter(keep func(*Tool) bool) []*Tool {
	var out []*Tool
	for _, t := range r.Latest() {
		if keep(t) {
			out = append(out, t)
		}
	}
	return out
}

// parseSemver parses MAJOR.MINOR.PATCH.
func parseSemver(v string) ([3]int, error) {
	var out [3]int
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return out, fmt.Errorf("not MAJOR.MINOR.PATCH: %q", v)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, fmt.Errorf("not MAJOR.MINOR.PATCH: %q", v)
		}
		out[i] = n
	}
	return out, nil
}

func compareSemver(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// answers reports whether version v answers the pin want.
func answers(v, want [3]int, exact bool) bool {
	if exact {
		return v == want
	}
	return v[0] == want[0] && compareSemver(v, want) >= 0
}

// parsePin parses a version pin, "MAJOR.MINOR.PATCH" or
// "=MAJOR.MINOR.PATCH", with the pattern of the proto rule
// toolsvc.v1.version_pin: decimal numbers without a sign or leading zero.
func parsePin(pin string) (v [3]int, exact, ok bool) {
	rest, exact := strings.CutPrefix(pin, "=")
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return v, exact, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 9 || (p[0] == '0' && len(p) > 1) || strings.Trim(p, "0123456789") != "" {
			return v, exact, false
		}
		v[i], _ = strconv.Atoi(p)
	}
	return v, exact, true
}

// httpRoute reads the google.api.http rule of a method.
func httpRoute(md protoreflect.MethodDescriptor) *toolsvcv1.HttpRoute {
	rule, ok := extension(md.Options(), annotations.E_Http).(*annotations.HttpRule)
	if !ok || rule == nil {
		return nil
	}
	switch p := rule.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return &toolsvcv1.HttpRoute{Method: "GET", Path: p.Get}
	case *annotations.HttpRule_Post:
		return &toolsvcv1.HttpRoute{Method: "POST", Path: p.Post}
	case *annotations.HttpRule_Put:
		return &toolsvcv1.HttpRoute{Method: "PUT", Path: p.Put}
	case *annotations.HttpRule_Delete:
		return &toolsvcv1.HttpRoute{Method: "DELETE", Path: p.Delete}
	case *annotations.HttpRule_Patch:
		return &toolsvcv1.HttpRoute{Method: "PATCH", Path: p.Patch}
	}
	return nil
}
