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

// Get returns the tool called name: the given version, or the highest
// semantic version when version is empty (docs/CONTRACTS.md). The error is a
// NOT_FOUND *toolerr.Error that names what exists.
func (r *Registry) Get(name, version string) (*Tool, error) {
	versions := r.byName[name]
	if len(versions) == 0 {
		return nil, toolerr.UnknownTool(name)
	}
	if version == "" {
		return versions[len(versions)-1], nil
	}
	for _, t := range versions {
		if t.Version == version {
			return t, nil
		}
	}
	known := make([]any, 0, len(versions))
	for _, t := range versions {
		known = append(known, t.Version)
	}
	return nil, toolerr.New(toolerr.NotFound, "tool %q has no version %s", name, version).
		WithDetails(map[string]any{"tool": name, "version": version, "versions": known})
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
