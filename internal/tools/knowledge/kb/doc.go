// Package kb loads an organisation's knowledge (ADRs, policies,
// patterns and specs written as Markdown files with YAML front matter),
// answers relevance queries over it and checks planned changes against the
// machine-checkable constraints the items declare. It backs the
// knowledge_query, knowledge_show and knowledge_check tools.
//
// # Files
//
// Each "*.md" file under a directory is one item. Its front matter sets id
// (required, ^[a-z0-9][a-z0-9._-]{0,127}$), type (adr, policy, pattern,
// spec), layer (company, org, team, project), title (required), status
// (required: draft, proposed, accepted, deprecated, superseded, rejected),
// severity (info, warn, block; default warn), summary, tags, supersedes,
// owner, author, created, updated and constraints; other keys are kept in
// Item.Metadata. The body is Item.Content. Every regex and glob is compiled
// when the file is loaded, so a bad pattern is a LoadError, never a failed
// check.
//
// # Tenants and owners
//
// LoadLibrary loads a knowledge directory for every tenant: tenants/<tenant>/
// holds one tenant's items, company-wide/ the company items an operator
// publishes to every tenant on purpose, and a directory without tenants/
// belongs to a deployment's single tenant (see LoadLibrary). An org, team
// or project item names its owner, the org_id, team_id or project_id a
// caller's credential carries; a Viewer sees company items and the items
// its ids own. Query, Check and GetVisible take a Viewer.
//
// # Precedence
//
// Items of every layer a caller sees apply to its checks, and each
// Violation names the Layer and Owner it came from. A narrower item never
// weakens a broader one silently: only an accepted item that names another
// in "supersedes", of the same or a broader layer, takes its place, and only
// for the callers that see it (a project spec superseding an org ADR
// replaces the ADR for that project alone). CheckResult.Superseded lists
// what was left out and why. A broader item naming a narrower one replaces
// nothing.
//
// # Constraints
//
// A constraint has an operator, a target, a pattern, optional appliesTo
// globs, a severity and a message. Targets:
//
//   - dependency: the regex must match a whole dependency name.
//   - file: the doublestar glob ("**" spans directories) matches file paths.
//   - code: the regex runs over file contents; matches carry their line.
//   - import: the regex must match a whole import path; imports are read
//     from Go, JavaScript/TypeScript and Python files.
//   - config: the regex runs over config files (*.yaml, *.yml, *.json,
//     *.toml, *.ini, *.env, *.properties unless appliesTo says otherwise).
//
// appliesTo limits file, code, import and config constraints to matching
// paths; it is an error on dependency constraints.
//
// # Check semantics
//
// Check evaluates only items with status accepted, that the Viewer sees,
// and that no seen item supersedes. CheckInput.ItemIDs
// restricts it to the named items: ids the set does not know are listed in
// UnknownItemIDs, named items that are not accepted are skipped.
//
// A constraint applies only when the input has something of its target's
// kind: dependencies for dependency; for the other targets at least one file
// in scope (files matching appliesTo, source files for import, config files
// for config). Checking only dependencies never trips a file rule, and a
// must_use rule is not broken by input it cannot see.
//
//   - must_use, must_exist: one violation, without location, when nothing
//     in scope matches.
//   - must_not_use, must_not_exist, must_not_match: one violation per match:
//     per dependency name, per file path, or per file and line for code,
//     import and config.
//   - must_match: every dependency, file path, import or file content in
//     scope must match; one violation per one that does not.
//
// Violation.Message is the constraint's message, else a generated sentence
// naming what matched. Passed is false iff a block violation was found,
// decided before MinSeverity (default warn) filters the list. Summary counts
// the listed violations, of which there are at most MaxViolations
// (Truncated says when more were found). Violations are ordered by item id,
// constraint index, file path and line. Check honours context cancellation
// between constraints and files.
//
// # Safety
//
// Patterns use RE2 (linear time) and are capped at MaxPatternLength bytes;
// matches collected per file are bounded by the room left for violations.
// No input makes the package panic; Parse and Check are fuzzed.
package kb
