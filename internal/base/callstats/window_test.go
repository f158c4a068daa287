package callstats

import (
	"testing"
	"time"
)

func TestTakeWindowPercentilesOfKnownCalls(t *testing.T) {
	var m Window
	for i := 100; i >= 1; i-- { // 1 ms .. 100 ms, out of order
		m.Record(time.Duration(i)*time.Millisecond, i%10 == 0)
	}
	w := m.Take()
	if w.Calls != 100 || w.Errors != 10 || w.P50Ms != 50 || w.P95Ms != 95 || w.P99Ms != 99 || w.MaxMs != 100 {
		t.Fatalf("window = %+v", w)
	}
	if w := m.Take(); w.Calls != 0 || w.P99Ms != 0 {
		t.Fatalf("the next interval starts empty: %+v", w)
	}
}
