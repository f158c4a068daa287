package kb

import (
	"reflect"
	"testing"
)

func TestExtractImports(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		content string
		want    []importRef
	}{
		{
			name:    "go file",
			path:    "a.go",
			content: "package a\n\nimport \"fmt\"\nimport (\n\tstdlog \"log\"\n\t_ \"embed\"\n\t. \"strings\"\n\t// \"commented/out\"\n\t\"github.com/x/y\"\n)\n\nvar s = `import \"not/an/import\"`\n",
			want:    []importRef{{"fmt", 3}, {"log", 5}, {"embed", 6}, {"strings", 7}, {"github.com/x/y", 9}},
		},
		{
			name:    "go fragment without package clause",
			path:    "frag.go",
			content: "import (\n\t\"os\"; \"io\"\n\tx \"net/http\"\n)\nimport `raw/path`\nimport ( \"a\"; \"b\" )\n",
			want:    []importRef{{"os", 2}, {"io", 2}, {"net/http", 3}, {"raw/path", 5}, {"a", 6}, {"b", 6}},
		},
		{
			name: "typescript",
			path: "web/app.tsx",
			content: "import React from 'react';\nimport {\n  a,\n  b,\n} from \"@scope/pkg\";\nimport type { T } from './types';\nimport './side-effect.css';\nexport * from 'lib/reexport';\n" +
				"const x = require( 'lodash' );\nconst y = await import(\"dyn\");\n",
			want: []importRef{{"react", 1}, {"@scope/pkg", 5}, {"./types", 6}, {"./side-effect.css", 7}, {"lib/reexport", 8}, {"lodash", 9}, {"dyn", 10}},
		},
		{
			name:    "python",
			path:    "svc/app.py",
			content: "import os\nimport a.b as c, d  # comment\nfrom . import sibling\nfrom ..pkg.mod import name\nfrom requests import (get,\n  post)\n# import commented\nx = 'import nothing'\n",
			want:    []importRef{{"os", 1}, {"a.b", 2}, {"d", 2}, {".", 3}, {"..pkg.mod", 4}, {"requests", 5}},
		},
		{name: "unknown language", path: "README.md", content: "import x from 'y'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := extractImports(importLanguage(tt.path), tt.content)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("imports\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestNormalizePath(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "plain", in: "a/b.go", want: "a/b.go"},
		{name: "dot slash", in: "./a/b.go", want: "a/b.go"},
		{name: "absolute", in: "/repo/a.go", want: "repo/a.go"},
		{name: "backslashes", in: `src\app\main.go`, want: "src/app/main.go"},
		{name: "dot dot cannot escape", in: "../../etc/passwd", want: "etc/passwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := normalizePath(tt.in); got != tt.want {
				t.Errorf("normalizePath(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
