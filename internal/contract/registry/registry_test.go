package registry_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/contract/registry"
	"github.com/toolsvc/toolsvc/internal/contract/toolerr"
	"github.com/toolsvc/toolsvc/internal/tests/support/testproto"
)

type compiled struct{ testproto.Compiled }

func compile(t testing.TB) compiled {
	t.Helper()
	return compiled{testproto.Compile(t, "testdata", "registrytest.proto")}
}

// service describes a compiled service for the registry; its handlers are
// never called by these tests.
func (c compiled) service(name string) registry.Service {
	return registry.Service{Desc: c.Service(name, nil)}
}

func TestBrokenDefinitionsAreRefusedWithTheRuleNamed(t *testing.T) {
	c := compile(t)
	tests := []struct {
		service string
		rule    string // substring of the violation's rule id
	}{
		{"BrokenBadNameService", "tool.contract.string.pattern"},
		{"BrokenShortDescriptionService", "tool.contract.string.min_len"},
		{"BrokenNoExamplesService", "tool.contract.repeated.min_items"},
		{"BrokenNoTagsService", "tool.contract.repeated.min_items"},
		{"BrokenCacheableNoTtlService", "tool.contract.tool.cache_ttl"},
		{"BrokenTtlNotCacheableService", "tool.contract.tool.cache_ttl"},
		{"BrokenBadPermissionService", "tool.contract.string.pattern"},
		{"BrokenQuerySideEffectService", "tool.contract.tool.query_side_effect"},
		{"BrokenQueryNotIdempotentService", "tool.contract.tool.query_side_effect"},
		{"BrokenMutationCachedService", "tool.contract.tool.mutation_cache"},
		{"BrokenMutationNoSideEffectService", registry.RuleMutationSideEffect},
		{"BrokenBadCategoryService", "tool.contract.string.in"},
		{"BrokenBadVersionService", "tool.contract.string.pattern"},
		{"BrokenShortDeprecationService", registry.RuleDeprecationWindow},
		{"BrokenMissingReplacementService", registry.RuleDeprecationReplacement},
		{"BrokenBadShapeService", registry.RuleResponseShape},
		{"BrokenBadExampleService", registry.RuleExampleParams},
		{"BrokenInvalidExampleService", registry.RuleExampleParams},
		{"BrokenReadOnlyDestructiveService", "tool.contract.tool.read_only"},
		{"NoOptionService", registry.RuleOptionPresent},
		{"BrokenUnknownVerbService", registry.RuleNameVerb},
		{"BrokenUndocumentedParamService", registry.RuleParamsDescribed},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			_, err := registry.New([]registry.Service{c.service(tt.service)}, registry.WithResolver(c.Files, c.Types))
			ce, ok := registry.AsCheckError(err)
			if !ok {
				t.Fatalf("New accepted a broken definition (err = %v)", err)
			}
			var rules []string
			for _, v := range ce.Violations {
				rules = append(rules, v.Rule)
				if v.Method == "" {
					t.Errorf("violation %q does not name the method", v)
				}
			}
			if !slices.ContainsFunc(rules, func(r string) bool { return strings.Contains(r, tt.rule) }) {
				t.Fatalf("violations %v do not name rule %q", rules, tt.rule)
			}
			for _, v := range ce.Violations {
				if strings.Contains(v.Rule, tt.rule) && v.Tool == "" && tt.rule != registry.RuleOptionPresent {
					t.Errorf("violation %q does not name the tool", v)
				}
			}
			if !strings.Contains(err.Error(), ce.Violations[0].Rule) {
				t.Errorf("error text %q does not name the rule", err.Error())
			}
		})
	}
}

func TestDuplicateNameAndVersionRefused(t *testing.T) {
	c := compile(t)
	_, err := registry.New([]registry.Service{c.service("GoodService"), c.service("DuplicateService")}, registry.WithResolver(c.Files, c.Types))
	ce, ok := registry.AsCheckError(err)
	if !ok {
		t.Fatalf("duplicate get-widget 1.2.0 accepted: %v", err)
	}
	if len(ce.Violations) != 1 || ce.Violations[0].Rule != registry.RuleNameUnique || ce.Violations[0].Tool != "get-widget" {
		t.Fatalf("violations = %v, want %s for get-widget", ce.Violations, registry.RuleNameUnique)
	}
}

func TestVersionsResolveToHighestSemver(t *testing.T) {
	c := compile(t)
	reg, err := registry.New([]registry.Service{c.service("GoodService")}, registry.WithResolver(c.Files, c.Types))
	if err != nil {
		t.Fatal(err)
	}
	got, err := reg.Get("get-widget", "")
	if err != nil {
		t.Fatal(err)
	}
	// 1.10.0 > 1.2.0 numerically, although "1.10.0" < "1.2.0" as strings.
	if got.Version != "1.10.0" {
		t.Fatalf("bare name resolved to %s, want 1.10.0", got.Version)
	}
	if v, err := reg.Get("get-widget", "=1.2.0"); err != nil || v.Version != "1.2.0" {
		t.Fatalf("Get(=1.2.0) = %v, %v", v, err)
	}
	if v, err := reg.Get("get-widget", "1.2.0"); err != nil || v.Version != "1.10.0" {
		t.Fatalf("Get(1.2.0) = %v, %v; want the highest compatible, 1.10.0", v, err)
	}
	_, err = reg.Get("get-widget", "9.9.9")
	if te, ok := toolerr.As(err); !ok || te.Code != toolerr.NotFound {
		t.Fatalf("unknown version: err = %v, want NOT_FOUND", err)
	}
	_, err = reg.Get("no-such-tool", "")
	if te, ok := toolerr.As(err); !ok || te.Code != toolerr.NotFound {
		t.Fatalf("unknown tool: err = %v, want NOT_FOUND", err)
	}
	if n := len(reg.Versions("get-widget")); n != 2 {
		t.Fatalf("versions = %d, want 2", n)
	}
	if !got.Deprecated() || got.RemovalDate.IsZero() {
		t.Fatal("1.10.0 should be deprecated with a removal date")
	}
	if got.Def.GetInputSchema().GetFields()["properties"].GetStructValue().GetFields()["limit"].GetStructValue().GetFields()["default"].GetNumberValue() != 10 {
		t.Fatalf("field_default not carried into the input schema: %v", got.Def.GetInputSchema())
	}
	if d := reg.ByTag("widgets"); len(d) != 1 || d[0].Version != "1.10.0" {
		t.Fatalf("ByTag = %v", d)
	}
	if d := reg.ByCategory("query"); len(d) != 1 {
		t.Fatalf("ByCategory = %v", d)
	}
}

func TestTestdataIsTheOnlyContractSource(t *testing.T) {
	// Guard: the test proto must stay in testdata (never compiled into gen/).
	if _, err := os.Stat(filepath.Join("testdata", "registrytest.proto")); err != nil {
		t.Fatal(err)
	}
}

func TestUndocumentedParameterIsNamed(t *testing.T) {
	c := compile(t)
	_, err := registry.New([]registry.Service{c.service("BrokenUndocumentedParamService")}, registry.WithResolver(c.Files, c.Types))
	if err == nil || !strings.Contains(err.Error(), ".filter.color") || !strings.Contains(err.Error(), "get-undocumented-widget") {
		t.Fatalf("err = %v, want the tool and the parameter .filter.color named", err)
	}
}

func TestEveryVerbIsExplained(t *testing.T) {
	for _, v := range registry.VerbList() {
		if registry.Verbs[v] == "" {
			t.Errorf("verb %q has no meaning", v)
		}
	}
}

// TestContractsDocListsTheChecklist: docs/CONTRACTS.md lists every
// checklist item with its rules (or as not applicable) and every verb.
func TestContractsDocListsTheChecklist(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "CONTRACTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range registry.Checklist {
		rules := "not applicable"
		if c.Enforced() {
			rules = "`" + strings.Join(c.Rules, "`, `") + "`"
		}
		if row := "| " + c.Item + " | " + rules + " | " + c.How + " |"; !strings.Contains(doc, row) {
			t.Errorf("docs/CONTRACTS.md lacks the row %q", row)
		}
	}
	for _, v := range registry.VerbList() {
		if row := "| `" + v + "` | " + registry.Verbs[v] + " |"; !strings.Contains(doc, row) {
			t.Errorf("docs/CONTRACTS.md lacks the verb row %q", row)
		}
	}
}

// TestLiveWatch: every watcher hears each stored registry once it is in
// service, and a stopped one no more.
func TestLiveWatch(t *testing.T) {
	a, b := &registry.Registry{}, &registry.Registry{}
	live := registry.NewLive(a)
	var heard []*registry.Registry
	stop := live.Watch(func(r *registry.Registry) {
		if live.Load() != r {
			t.Error("a watcher heard a registry not yet in service")
		}
		heard = append(heard, r)
	})
	live.Store(b)
	stop()
	live.Store(a)
	if len(heard) != 1 || heard[0] != b {
		t.Fatalf("heard %v, want only the first store", heard)
	}
}
