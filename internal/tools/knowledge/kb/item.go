package kb

import (
	"regexp"
	"time"
)

// Knowledge item types accepted in the "type" front-matter key.
const (
	TypeADR     = "adr"
	TypePolicy  = "policy"
	TypePattern = "pattern"
	TypeSpec    = "spec"
)

// Layers accepted in the "layer" front-matter key, from the broadest to the
// narrowest. Query orders unranked results in this precedence.
const (
	LayerCompany = "company"
	LayerOrg     = "org"
	LayerTeam    = "team"
	LayerProject = "project"
)

// Statuses accepted in the "status" front-matter key. Only StatusAccepted
// items are evaluated by Check and returned by a Query without Statuses.
const (
	StatusDraft      = "draft"
	StatusProposed   = "proposed"
	StatusAccepted   = "accepted"
	StatusDeprecated = "deprecated"
	StatusSuperseded = "superseded"
	StatusRejected   = "rejected"
)

// Severities of items and constraints, in increasing order. Only a
// SeverityBlock violation makes a CheckResult fail.
const (
	SeverityInfo  = "info"
	SeverityWarn  = "warn"
	SeverityBlock = "block"
)

// Constraint operators. OpMustUse and OpMustExist (and OpMustNotUse and
// OpMustNotExist) behave identically; both spellings exist so that a rule
// reads naturally for its target ("must_use" a dependency, "must_exist" a
// file).
const (
	OpMustUse      = "must_use"
	OpMustNotUse   = "must_not_use"
	OpMustMatch    = "must_match"
	OpMustNotMatch = "must_not_match"
	OpMustExist    = "must_exist"
	OpMustNotExist = "must_not_exist"
)

// Constraint targets: what a constraint's Pattern is matched against.
const (
	// TargetDependency matches the regex against whole dependency names.
	TargetDependency = "dependency"
	// TargetFile matches the doublestar glob against file paths.
	TargetFile = "file"
	// TargetCode matches the regex against file contents.
	TargetCode = "code"
	// TargetImport matches the regex against whole import paths found in
	// Go, JavaScript/TypeScript and Python files.
	TargetImport = "import"
	// TargetConfig matches the regex against the contents of config files.
	TargetConfig = "config"
)

// Limits that keep loading and checking bounded on hostile input.
const (
	// MaxPatternLength is the longest pattern or appliesTo glob accepted, in bytes.
	MaxPatternLength = 1024
	// MaxViolations is the most violations a CheckResult reports.
	MaxViolations = 1000
	// MaxFileSize is the largest knowledge file LoadDir reads, in bytes.
	MaxFileSize = 1 << 20
)

var (
	idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,127}$`)
	// ownerPattern is what an org, team or project id may look like in
	// front matter: printable, no spaces, at most 128 bytes.
	ownerPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)

	validTypes      = []string{TypeADR, TypePolicy, TypePattern, TypeSpec}
	validLayers     = []string{LayerCompany, LayerOrg, LayerTeam, LayerProject}
	validStatuses   = []string{StatusDraft, StatusProposed, StatusAccepted, StatusDeprecated, StatusSuperseded, StatusRejected}
	validSeverities = []string{SeverityInfo, SeverityWarn, SeverityBlock}
	validOperators  = []string{OpMustUse, OpMustNotUse, OpMustMatch, OpMustNotMatch, OpMustExist, OpMustNotExist}
	validTargets    = []string{TargetDependency, TargetFile, TargetCode, TargetImport, TargetConfig}
)

// Item is one knowledge item: an ADR, policy, pattern or spec loaded from a
// Markdown file with YAML front matter. Items returned by a Set are shared
// and must not be modified.
type Item struct {
	ID         string
	Type       string
	Layer      string
	Title      string
	Summary    string
	Status     string
	Severity   string // default severity of the item's constraints; "warn" when unset
	Supersedes string // id of the item this one replaces, if any
	// Owner binds the item's layer to one org, team or project: the
	// org_id, team_id or project_id a caller's credential carries. Empty
	// for company items, which every caller of the tenant sees, and for
	// org, team and project items of the single-tenant layout that predate
	// owners (see Library).
	Owner string
	// Tenant is the tenant the item belongs to, set by LoadLibrary from the
	// item's directory; "" for company-wide items published to every tenant,
	// and for items loaded by LoadDir, Parse or NewSet.
	Tenant string
	Author string
	// SupersededBy lists, sorted, the ids of items in the same Set whose
	// Supersedes names this item. NewSet computes it.
	SupersededBy []string
	Tags         []string
	Constraints  []Constraint
	Content      string         // Markdown body after the front matter
	Metadata     map[string]any // front-matter keys this package does not interpret
	Path         string         // file path relative to the loaded directory, slash-separated
	// Hash is the hex SHA-256 of a canonical encoding of the item's type,
	// layer, title, summary, status, severity, tags, constraints and content,
	// so that a sync can tell a changed item from an unchanged one.
	Hash      string
	CreatedAt time.Time // "created" key, else the file's modification time
	UpdatedAt time.Time // "updated" key, else the file's modification time

	// rules holds the compiled form of Constraints, index for index.
	rules []rule
}

// Constraint is one machine-checkable rule of an item.
type Constraint struct {
	Operator string
	Target   string
	// Pattern is a regular expression (RE2 syntax) for every target except
	// TargetFile, where it is a doublestar path glob. Dependency and import
	// regexes match whole names: "mysql" does not match "mysqlx".
	Pattern string
	// AppliesTo limits file-based targets to files whose path matches one of
	// these doublestar globs. Empty means every file for file and code
	// targets, source files for import and config files for config.
	AppliesTo []string
	// Severity is resolved at load: the constraint's own, else the item's,
	// else "warn".
	Severity string
	Message  string
}

// rule is a Constraint compiled once at load.
type rule struct {
	re   *regexp.Regexp // nil for TargetFile
	glob string         // validated glob for TargetFile
}

func severityRank(s string) int {
	switch s {
	case SeverityInfo:
		return 1
	case SeverityWarn:
		return 2
	case SeverityBlock:
		return 3
	}
	return 0
}

func layerRank(l string) int {
	switch l {
	case LayerCompany:
		return 0
	case LayerOrg:
		return 1
	case LayerTeam:
		return 2
	case LayerProject:
		return 3
	}
	return 4
}
