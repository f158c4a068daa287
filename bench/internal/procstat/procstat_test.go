package procstat

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    time.Duration
		wantErr bool
	}{
		{name: "plain", in: "42 (toolsvc) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 8 0 1 1 1", want: 3 * time.Second},
		{name: "command with spaces and parens", in: "7 (a) b (c)) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1", want: 30 * time.Millisecond},
		{name: "no command", in: "7 a R 1", wantErr: true},
		{name: "too short", in: "7 (a) R 1 2 3", wantErr: true},
		{name: "not a number", in: "7 (a) R 1 7 7 0 -1 0 0 0 0 0 x 2 0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("cpu = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		rss, peak int64
		wantErr   bool
	}{
		{name: "both", in: "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n", rss: 1 << 20, peak: 2 << 20},
		{name: "missing", in: "Name:\tx\nVmRSS:\t1 kB\n", wantErr: true},
		{name: "bad unit", in: "VmHWM:\t1 MB\nVmRSS:\t1 kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rss, peak, err := parseStatus([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if rss != tt.rss || peak != tt.peak {
				t.Errorf("rss, peak = %d, %d; want %d, %d", rss, peak, tt.rss, tt.peak)
			}
		})
	}
}

func TestReadSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// Burn some CPU so the reading cannot be zero by accident of timing.
	deadline := time.Now().Add(30 * time.Millisecond)
	for x := 0; time.Now().Before(deadline); x++ {
		_ = strconv.Itoa(x)
	}
	s, err := Read("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.CPU <= 0 || s.RSS <= 0 || s.PeakRSS < s.RSS {
		t.Errorf("implausible sample %+v", s)
	}
}

func TestReadMissing(t *testing.T) {
	tests := []struct {
		name string
		root string
		want error
	}{
		{name: "no proc", root: filepath.Join(t.TempDir(), "absent"), want: ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Read(tt.root, 1); err != tt.want { //nolint:errorlint // sentinel identity is the contract
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
