package kb

import (
	"slices"
	"testing"
)

func matchIDs(ms []Match) []string {
	ids := []string{}
	for _, m := range ms {
		ids = append(ids, m.Item.ID)
	}
	return ids
}

func TestQueryFilters(t *testing.T) {
	set := loadExamples(t)
	tests := []struct {
		name      string
		q         Query
		want      []string
		wantTotal int
	}{
		{
			name: "no filters: accepted only, by layer then id",
			q:    Query{},
			want: []string{"pol-007-structured-logging", "pol-012-no-plaintext-secrets", "adr-042-database-selection", "pat-013-api-naming", "spec-101-error-wrapping"},
		},
		{name: "type", q: Query{Type: TypeADR}, want: []string{"adr-042-database-selection"}},
		{name: "layer", q: Query{Layer: LayerCompany}, want: []string{"pol-007-structured-logging", "pol-012-no-plaintext-secrets"}},
		{name: "tags need all", q: Query{Tags: []string{"database", "INFRASTRUCTURE"}}, want: []string{"adr-042-database-selection"}},
		{name: "tags none match", q: Query{Tags: []string{"database", "logging"}}, want: []string{}},
		{name: "status superseded", q: Query{Statuses: []string{StatusSuperseded}}, want: []string{"adr-017-mongodb-for-events"}},
		{name: "several statuses", q: Query{Type: TypeADR, Statuses: []string{StatusAccepted, StatusSuperseded}}, want: []string{"adr-017-mongodb-for-events", "adr-042-database-selection"}},
		{name: "unknown type matches nothing", q: Query{Type: "memo"}, want: []string{}},
		{name: "limit keeps total", q: Query{Limit: 2}, want: []string{"pol-007-structured-logging", "pol-012-no-plaintext-secrets"}, wantTotal: 5},
		{name: "stop words only is no text", q: Query{Text: "the of and", Layer: LayerTeam}, want: []string{"pat-013-api-naming"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total := set.Query(tt.q)
			if ids := matchIDs(got); !slices.Equal(ids, tt.want) {
				t.Errorf("ids = %v, want %v", ids, tt.want)
			}
			wantTotal := tt.wantTotal
			if wantTotal == 0 {
				wantTotal = len(tt.want)
			}
			if total != wantTotal {
				t.Errorf("total = %d, want %d", total, wantTotal)
			}
			for _, m := range got {
				if m.Score != 1 {
					t.Errorf("%s score = %v, want 1 without text", m.Item.ID, m.Score)
				}
			}
		})
	}
}

func TestQueryRanking(t *testing.T) {
	set := loadExamples(t)
	tests := []struct {
		name  string
		q     Query
		first string
		min   int
	}{
		{name: "spec example", q: Query{Text: "database selection", Type: TypeADR}, first: "adr-042-database-selection", min: 1},
		{name: "stemming: databases selected", q: Query{Text: "Which databases are selected?"}, first: "adr-042-database-selection", min: 1},
		{name: "title beats body", q: Query{Text: "logging"}, first: "pol-007-structured-logging", min: 1},
		{name: "tag term", q: Query{Text: "secrets"}, first: "pol-012-no-plaintext-secrets", min: 1},
		{name: "status widens search", q: Query{Text: "mongodb events", Statuses: []string{StatusSuperseded, StatusAccepted}}, first: "adr-017-mongodb-for-events", min: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, total := set.Query(tt.q)
			if len(got) < tt.min || got[0].Item.ID != tt.first {
				t.Fatalf("matches = %v, want %s first and at least %d", matchIDs(got), tt.first, tt.min)
			}
			if total != len(got) {
				t.Errorf("total %d != %d matches under the default limit", total, len(got))
			}
			for i, m := range got {
				if m.Score <= 0 || m.Score > 1 {
					t.Errorf("%s score %v outside (0, 1]", m.Item.ID, m.Score)
				}
				if i > 0 && m.Score > got[i-1].Score {
					t.Errorf("not sorted by score: %v", got)
				}
			}
		})
	}

	t.Run("no shared term matches nothing", func(t *testing.T) {
		got, total := set.Query(Query{Text: "kubernetes zebra"})
		if len(got) != 0 || total != 0 {
			t.Errorf("matches = %v, total %d", matchIDs(got), total)
		}
	})
}

func TestQueryScore(t *testing.T) {
	title := mustParse(t, "a.md", itemSource("a", "title: Caching strategy"))
	body := mustParse(t, "b.md", "---\nid: b\ntype: spec\nlayer: project\ntitle: Other\nstatus: accepted\n---\nWe discuss caching here.\n")
	set := mustSet(t, title, body)
	got, _ := set.Query(Query{Text: "caching strategy"})
	if ids := matchIDs(got); !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("ids = %v", ids)
	}
	if got[0].Score != 1 {
		t.Errorf("all terms in title: score %v, want 1", got[0].Score)
	}
	if want := weightContent / 2; got[1].Score != want {
		t.Errorf("one of two terms in body: score %v, want %v", got[1].Score, want)
	}
}
