package kb

import (
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// importRef is one import found in a file, with its 1-based line.
type importRef struct {
	path string
	line int
}

// Source languages whose imports TargetImport understands.
const (
	langGo     = "go"
	langJS     = "js" // JavaScript and TypeScript
	langPython = "python"
)

func importLanguage(p string) string {
	switch strings.ToLower(path.Ext(p)) {
	case ".go":
		return langGo
	case ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts":
		return langJS
	case ".py", ".pyi":
		return langPython
	}
	return ""
}

// extractImports returns the imports of a source file in line order. It
// reads imports only; it is a scanner, not a compiler, and tolerates
// fragments and syntax errors.
func extractImports(lang, content string) []importRef {
	switch lang {
	case langGo:
		return goImports(content)
	case langJS:
		return jsImports(content)
	case langPython:
		return pythonImports(content)
	}
	return nil
}

// goImports uses the real Go parser, which stops after the import
// declarations, and falls back to a line scanner for fragments the parser
// rejects (a snippet without a package clause, say).
func goImports(content string) []importRef {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", content, parser.ImportsOnly|parser.SkipObjectResolution)
	if err == nil && f != nil {
		out := make([]importRef, 0, len(f.Imports))
		for _, spec := range f.Imports {
			p, uerr := strconv.Unquote(spec.Path.Value)
			if uerr != nil {
				continue
			}
			out = append(out, importRef{path: p, line: fset.Position(spec.Path.Pos()).Line})
		}
		return out
	}
	return goImportsByLine(content)
}

var (
	goImportLine  = regexp.MustCompile(`^\s*import\s+(?:[\p{L}_][\p{L}\p{N}_]*\s+|[._]\s+)?["` + "`" + `]([^"` + "`" + `]+)["` + "`" + `]`)
	goImportBlock = regexp.MustCompile(`^\s*import\s*\(\s*(.*)$`)
	goImportSpec  = regexp.MustCompile(`^\s*(?:[\p{L}_][\p{L}\p{N}_]*\s+|[._]\s+)?["` + "`" + `]([^"` + "`" + `]+)["` + "`" + `]`)
)

func goImportsByLine(content string) []importRef {
	var out []importRef
	inBlock := false
	for i, line := range strings.Split(content, "\n") {
		if inBlock {
			rest := line
			closed := false
			if before, _, found := strings.Cut(rest, ")"); found {
				rest, closed = before, true
			}
			for _, spec := range strings.Split(rest, ";") {
				if m := goImportSpec.FindStringSubmatch(spec); m != nil {
					out = append(out, importRef{path: m[1], line: i + 1})
				}
			}
			inBlock = !closed
			continue
		}
		if m := goImportLine.FindStringSubmatch(line); m != nil {
			out = append(out, importRef{path: m[1], line: i + 1})
			continue
		}
		if m := goImportBlock.FindStringSubmatch(line); m != nil {
			rest, _, closed := strings.Cut(m[1], ")")
			for _, spec := range strings.Split(rest, ";") {
				if sm := goImportSpec.FindStringSubmatch(spec); sm != nil {
					out = append(out, importRef{path: sm[1], line: i + 1})
				}
			}
			inBlock = !closed
		}
	}
	return out
}

// jsImportPatterns each capture a module specifier in group 1. They run over
// the whole content because an import's braces may span lines.
var jsImportPatterns = []*regexp.Regexp{
	// import 'x'  (side effects only)
	regexp.MustCompile(`\bimport\s*['"]([^'"\n]+)['"]`),
	// import a from 'x', import {a, b} from "x", export * from 'x', import type {T} from 'x'
	regexp.MustCompile(`\b(?:import|export)\s[^'";]*?\bfrom\s*['"]([^'"\n]+)['"]`),
	// require('x')
	regexp.MustCompile(`\brequire\s*\(\s*['"]([^'"\n]+)['"]\s*\)`),
	// import('x')
	regexp.MustCompile(`\bimport\s*\(\s*['"]([^'"\n]+)['"]\s*\)`),
}

func jsImports(content string) []importRef {
	type found struct {
		offset int
		path   string
	}
	var all []found
	for _, re := range jsImportPatterns {
		for _, m := range re.FindAllStringSubmatchIndex(content, -1) {
			all = append(all, found{offset: m[2], path: content[m[2]:m[3]]})
		}
	}
	slices.SortFunc(all, func(a, b found) int { return a.offset - b.offset })
	all = slices.CompactFunc(all, func(a, b found) bool { return a.offset == b.offset })
	lines := newLineIndex(content)
	out := make([]importRef, 0, len(all))
	for _, f := range all {
		out = append(out, importRef{path: f.path, line: lines.line(f.offset)})
	}
	return out
}

var (
	pyImport     = regexp.MustCompile(`^\s*import\s+(.+)$`)
	pyFromImport = regexp.MustCompile(`^\s*from\s+(\.*[\p{L}_][\p{L}\p{N}_.]*|\.+)\s+import\b`)
	pyModule     = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_.]*$`)
)

func pythonImports(content string) []importRef {
	var out []importRef
	for i, line := range strings.Split(content, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if m := pyFromImport.FindStringSubmatch(line); m != nil {
			out = append(out, importRef{path: m[1], line: i + 1})
			continue
		}
		m := pyImport.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		// import a.b as c, d
		for _, part := range strings.Split(m[1], ",") {
			fields := strings.Fields(part)
			if len(fields) > 0 && pyModule.MatchString(fields[0]) {
				out = append(out, importRef{path: fields[0], line: i + 1})
			}
		}
	}
	return out
}
