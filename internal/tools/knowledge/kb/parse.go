package kb

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// LoadError reports a knowledge file that could not be loaded. Loading goes
// on without it, so one bad file never hides the rest of a knowledge set.
type LoadError struct {
	Path   string // file path as given to Parse, relative to the directory for LoadDir and LoadLibrary
	Reason string // a human sentence, e.g. `constraint 2: unknown operator "must_be"`
	// Tenant is the tenant whose directory holds the file (LoadLibrary);
	// "" for company-wide files and files outside any tenant's directory.
	Tenant string
}

// Error returns "path: reason".
func (e *LoadError) Error() string {
	return e.Path + ": " + e.Reason
}

// dateLayouts are the accepted spellings of "created" and "updated".
var dateLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"}

// Parse parses one knowledge file: YAML front matter between "---" lines,
// then a Markdown body that becomes Content. It validates every field and
// compiles every constraint, so an Item it returns is ready to check with.
// A leading byte-order mark is dropped and CRLF line endings become LF.
// CreatedAt and UpdatedAt stay zero unless the front matter sets them;
// LoadDir falls back to the file's modification time. Every problem is
// returned as a *LoadError naming path.
func Parse(path string, data []byte) (*Item, error) {
	fail := func(format string, args ...any) (*Item, error) {
		return nil, &LoadError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	front, body, reason := splitFrontMatter(string(data))
	if reason != "" {
		return fail("front matter: %s", reason)
	}
	root, err := parseYAML(front)
	if err != nil {
		return fail("front matter: %v", err)
	}
	it := &Item{Path: path, Content: strings.TrimSpace(body)}
	if reason := decodeFrontMatter(root, it); reason != "" {
		return fail("%s", reason)
	}
	if reason, ok := prepare(it); !ok {
		return fail("%s", reason)
	}
	return it, nil
}

// splitFrontMatter returns the YAML between the opening "---" line and the
// closing "---" (or "...") line, and the body after it.
func splitFrontMatter(text string) (front, body, reason string) {
	text = strings.TrimPrefix(text, "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return "", "", `missing: the file must start with a "---" line`
	}
	offset := 0
	for offset <= len(rest) {
		line, _, found := strings.Cut(rest[offset:], "\n")
		if t := strings.TrimRight(line, " \t"); t == "---" || t == "..." {
			end := offset + len(line)
			if found {
				end++
			}
			return rest[:offset], rest[end:], ""
		}
		if !found {
			break
		}
		offset += len(line) + 1
	}
	return "", "", `no closing "---" line`
}

// parseYAML parses the front matter into a node tree. The YAML library is
// third-party code fed untrusted input, so a panic in it becomes an error.
func parseYAML(front string) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("yaml: %v", r)
		}
	}()
	var doc yaml.Node
	// The leading newline stands for the opening "---" line, so that line
	// numbers in errors are the file's.
	if err := yaml.Unmarshal([]byte("\n"+front), &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || (doc.Kind == yaml.DocumentNode && len(doc.Content) == 0) {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	n := resolve(doc.Content[0])
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return &yaml.Node{Kind: yaml.MappingNode}, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("must be a YAML mapping of keys to values")
	}
	return n, nil
}

func resolve(n *yaml.Node) *yaml.Node {
	for range 64 {
		if n.Kind != yaml.AliasNode || n.Alias == nil {
			return n
		}
		n = n.Alias
	}
	return n
}

// decodeFrontMatter copies the known keys into it and keeps the others as
// Metadata.
func decodeFrontMatter(m *yaml.Node, it *Item) string {
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if r := checkKey(k, seen); r != "" {
			return "front matter: " + r
		}
		var reason string
		switch key := k.Value; key {
		case "id":
			it.ID, reason = scalar(key, v)
		case "type":
			it.Type, reason = scalar(key, v)
		case "layer":
			it.Layer, reason = scalar(key, v)
		case "title":
			it.Title, reason = scalar(key, v)
		case "summary":
			it.Summary, reason = scalar(key, v)
		case "status":
			it.Status, reason = scalar(key, v)
		case "severity":
			it.Severity, reason = scalar(key, v)
		case "supersedes":
			it.Supersedes, reason = scalar(key, v)
		case "owner":
			it.Owner, reason = scalar(key, v)
		case "author":
			it.Author, reason = scalar(key, v)
		case "tags":
			it.Tags, reason = stringList(key, v)
		case "created":
			it.CreatedAt, reason = date(key, v)
		case "updated":
			it.UpdatedAt, reason = date(key, v)
		case "constraints":
			it.Constraints, reason = constraints(v)
		default:
			var val any
			if err := v.Decode(&val); err != nil {
				return fmt.Sprintf("front matter: %q: %v", key, err)
			}
			if it.Metadata == nil {
				it.Metadata = map[string]any{}
			}
			it.Metadata[key] = jsonCompatible(val)
		}
		if reason != "" {
			return reason
		}
	}
	return ""
}

// checkKey rejects non-string and repeated keys: the YAML library accepts a
// repeated key in a node tree, and the later value would silently win.
func checkKey(k *yaml.Node, seen map[string]bool) string {
	if k.Kind != yaml.ScalarNode {
		return fmt.Sprintf("line %d: keys must be strings", k.Line)
	}
	if seen[k.Value] {
		return fmt.Sprintf("line %d: duplicate key %q", k.Line, k.Value)
	}
	seen[k.Value] = true
	return ""
}

func scalar(key string, v *yaml.Node) (string, string) {
	if v.Kind != yaml.ScalarNode {
		return "", fmt.Sprintf("%q must be a string (line %d)", key, v.Line)
	}
	if v.Tag == "!!null" {
		return "", ""
	}
	return strings.TrimSpace(v.Value), ""
}

// stringList accepts a list of strings or, for convenience, one string.
func stringList(key string, v *yaml.Node) ([]string, string) {
	switch v.Kind {
	case yaml.ScalarNode:
		s, reason := scalar(key, v)
		if s == "" {
			return nil, reason
		}
		return []string{s}, reason
	case yaml.SequenceNode:
		out := make([]string, 0, len(v.Content))
		for _, e := range v.Content {
			s, reason := scalar(key, resolve(e))
			if reason != "" {
				return nil, fmt.Sprintf("%q must be a list of strings (line %d)", key, e.Line)
			}
			out = append(out, s)
		}
		return out, ""
	}
	return nil, fmt.Sprintf("%q must be a list of strings (line %d)", key, v.Line)
}

func date(key string, v *yaml.Node) (time.Time, string) {
	s, reason := scalar(key, v)
	if reason != "" || s == "" {
		return time.Time{}, reason
	}
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, ""
		}
	}
	return time.Time{}, fmt.Sprintf("%q: invalid date %q (want YYYY-MM-DD or RFC 3339)", key, s)
}

func constraints(v *yaml.Node) ([]Constraint, string) {
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil, ""
	}
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Sprintf(`"constraints" must be a list (line %d)`, v.Line)
	}
	out := make([]Constraint, 0, len(v.Content))
	for i, e := range v.Content {
		c, reason := constraint(resolve(e))
		if reason != "" {
			return nil, fmt.Sprintf("constraint %d: %s", i+1, reason)
		}
		out = append(out, c)
	}
	return out, ""
}

func constraint(m *yaml.Node) (Constraint, string) {
	var c Constraint
	if m.Kind != yaml.MappingNode {
		return c, fmt.Sprintf("must be a mapping (line %d)", m.Line)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if r := checkKey(k, seen); r != "" {
			return c, r
		}
		var reason string
		switch key := k.Value; key {
		case "operator":
			c.Operator, reason = scalar(key, v)
		case "target":
			c.Target, reason = scalar(key, v)
		case "pattern":
			// Not trimmed: spaces can be part of a regex.
			if v.Kind != yaml.ScalarNode {
				reason = fmt.Sprintf(`"pattern" must be a string (line %d)`, v.Line)
			} else if v.Tag != "!!null" {
				c.Pattern = v.Value
			}
		case "appliesTo":
			c.AppliesTo, reason = stringList(key, v)
		case "severity":
			c.Severity, reason = scalar(key, v)
		case "message":
			c.Message, reason = scalar(key, v)
		default:
			// A misspelt key would silently widen a rule, so it is an error.
			reason = fmt.Sprintf("unknown field %q (line %d)", key, k.Line)
		}
		if reason != "" {
			return c, reason
		}
	}
	return c, ""
}

// jsonCompatible turns the map[any]any values YAML can produce into
// map[string]any, so Metadata can be encoded as JSON or protobuf Struct.
func jsonCompatible(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = jsonCompatible(e)
		}
		return v
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[fmt.Sprint(k)] = jsonCompatible(e)
		}
		return out
	case []any:
		for i, e := range v {
			v[i] = jsonCompatible(e)
		}
		return v
	}
	return v
}
