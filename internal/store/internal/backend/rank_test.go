package backend

import "testing"

func TestBM25(t *testing.T) {
	docs := []string{
		"kafka retention policy for the billing cluster",                                               // both words
		"Kafka, kafka and more KAFKA: retention retention",                                             // more of both
		"the retention of memories in a long essay about nothing in particular at all, really nothing", // one, long
		"unrelated text",
		"",
	}
	s := BM25([]string{"kafka", "retention"}, docs)
	if !(s[1] > s[0] && s[0] > s[2] && s[2] > 0) {
		t.Errorf("scores %v: want more occurrences > both words > one word in a long text > 0", s)
	}
	if s[3] != 0 || s[4] != 0 {
		t.Errorf("scores %v: documents without the words must score 0", s)
	}
	// Stems match: "memories" scores for "memory".
	if s := BM25([]string{"memory"}, []string{"old memories", "nothing"}); s[0] <= 0 || s[1] != 0 {
		t.Errorf("stemmed match scores %v", s)
	}
	// A rarer word weighs more: each document has one of the two words.
	s = BM25([]string{"common", "rare"}, []string{"common", "common", "common", "rare"})
	if s[3] <= s[0] {
		t.Errorf("scores %v: the rare word should outweigh the common one", s)
	}
	if s := BM25([]string{"x"}, nil); len(s) != 0 {
		t.Errorf("no documents gave %v", s)
	}
}
