package mcpclient_test

import (
	"strings"
	"testing"

	"github.com/toolsvc/toolsvc/internal/base/mcpclient"
)

func TestReadEvents(t *testing.T) {
	stream := ": comment\n\nevent: message\ndata: {\"a\":\ndata:1}\n\ndata:{\"b\":2}\n\ndata: {\"tail\":3}"
	var got []string
	found, err := mcpclient.ReadEvents(strings.NewReader(stream), 1<<20, func(data []byte) bool {
		got = append(got, string(data))
		return false
	})
	if err != nil || found {
		t.Fatalf("found %v, err %v", found, err)
	}
	want := []string{"{\"a\":\n1}", "{\"b\":2}", "{\"tail\":3}"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, want %q", got, want)
	}
	found, err = mcpclient.ReadEvents(strings.NewReader(stream), 1<<20, func(data []byte) bool { return strings.Contains(string(data), "b") })
	if err != nil || !found {
		t.Fatalf("stop at the second event: found %v, err %v", found, err)
	}
	if _, err := mcpclient.ReadEvents(strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 64, func([]byte) bool { return false }); err == nil {
		t.Fatal("an event over the limit was read")
	}
}
