package backend

import "testing"

func TestCheckNotNewer(t *testing.T) {
	known := []Migration{{Version: 1}, {Version: 2}, {Version: 5}}
	for _, c := range []struct {
		applied []int
		ok      bool
	}{{nil, true}, {[]int{1, 2}, true}, {[]int{1, 2, 5}, true}, {[]int{1, 2, 5, 6}, false}, {[]int{7}, false}} {
		if err := CheckNotNewer(known, c.applied); (err == nil) != c.ok {
			t.Errorf("applied %v: %v, want ok %v", c.applied, err, c.ok)
		}
	}
	if err := CheckNotNewer(nil, []int{1}); err == nil {
		t.Error("a build without migrations accepted a migrated database")
	}
}
