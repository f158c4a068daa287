package auth

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxAuthFileBytes bounds the auth file; a larger one is surely a mistake.
const maxAuthFileBytes = 1 << 20

// LoadFile reads and validates the auth file at path. Decoding is strict: an
// unknown or duplicated key is an error naming the key and its line, and
// every validation problem names its line and entry (e.g.
// "line 9: api_keys[2]: tenant is required"). All problems are reported at
// once in a *[ConfigError]. A relative jwks_file is resolved against the
// directory of path.
func LoadFile(path string) (*Config, error) {
	data, err := readBounded(path, maxAuthFileBytes)
	if err != nil {
		return nil, fmt.Errorf("auth file %s: %w", path, err)
	}
	cfg, err := parseConfig(path, data)
	if err != nil {
		return nil, err
	}
	if cfg.JWT != nil && cfg.JWT.JWKSFile != "" && !filepath.IsAbs(cfg.JWT.JWKSFile) {
		cfg.JWT.JWKSFile = filepath.Join(filepath.Dir(path), cfg.JWT.JWKSFile)
	}
	return cfg, nil
}

func parseConfig(path string, data []byte) (*Config, error) {
	ps := &problems{lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		ps.list = append(ps.list, strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, ps.err(path)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		ps.add("", "", "file is empty")
		return nil, ps.err(path)
	}
	walkYAML(ps, doc.Content[0], "", reflect.TypeFor[Config]())
	if len(ps.list) > 0 {
		return nil, ps.err(path)
	}
	var cfg Config
	if err := doc.Content[0].Decode(&cfg); err != nil {
		if te, ok := errors.AsType[*yaml.TypeError](err); ok {
			ps.list = append(ps.list, te.Errors...)
		} else {
			ps.list = append(ps.list, err.Error())
		}
		return nil, ps.err(path)
	}
	cfg.validate(ps)
	if err := ps.err(path); err != nil {
		return nil, err
	}
	cfg.lines = ps.lines
	return &cfg, nil
}

// walkYAML records the line of every entry under path and reports duplicate
// keys, and keys unknown to the struct type t. Maps (such as identifiers) are
// checked by validation instead; type mismatches are left to Decode, which
// names their line.
func walkYAML(ps *problems, n *yaml.Node, path string, t reflect.Type) {
	ps.lines[path] = n.Line
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice) {
		if t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode {
			for i, item := range n.Content {
				walkYAML(ps, item, fmt.Sprintf("%s[%d]", path, i), t.Elem())
			}
			return
		}
		t = t.Elem()
	}
	if n.Kind != yaml.MappingNode {
		return
	}
	fields := yamlFields(t)
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		child := key.Value
		if path != "" {
			child = path + "." + key.Value
		}
		if line, dup := first[key.Value]; dup {
			ps.list = append(ps.list, fmt.Sprintf("line %d: %s: duplicate key (first at line %d)", key.Line, child, line))
			continue
		}
		first[key.Value] = key.Line
		if fields == nil {
			ps.lines[child] = key.Line
			continue
		}
		ft, ok := fields[key.Value]
		if !ok {
			where := ""
			if path != "" {
				where = path + ": "
			}
			ps.list = append(ps.list, fmt.Sprintf("line %d: %sunknown key %q", key.Line, where, key.Value))
			continue
		}
		walkYAML(ps, value, child, ft)
		ps.lines[child] = key.Line
	}
}

// yamlFields maps the yaml tag names of struct type t to their field types;
// nil when t is not a struct.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := make(map[string]reflect.Type, t.NumField())
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out[name] = f.Type
		}
	}
	return out
}

// readBounded reads a whole file, refusing one larger than limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}
