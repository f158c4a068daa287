// Package procstat reads a local process's CPU time and memory from /proc,
// so a load run can charge the server's work per request without any
// cooperation from the server.
package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture Go supports; the kernel exports it
// to user space as a fixed ABI value.
const clockTicks = 100

// ErrUnsupported is returned where /proc is not available.
var ErrUnsupported = errors.New("procstat: /proc is not available")

// Sample is one reading of a process.
type Sample struct {
	// CPU is user plus system time consumed so far.
	CPU time.Duration
	// RSS is the resident set size now, in bytes.
	RSS int64
	// PeakRSS is the high-water mark of the resident set (VmHWM), in bytes.
	PeakRSS int64
}

// Read samples the process pid from root (normally "/proc").
func Read(root string, pid int) (Sample, error) {
	dir := fmt.Sprintf("%s/%d", root, pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, e := os.Stat(root); e != nil {
				return Sample{}, ErrUnsupported
			}
		}
		return Sample{}, fmt.Errorf("procstat: %w", err)
	}
	cpu, err := parseStat(stat)
	if err != nil {
		return Sample{}, err
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return Sample{}, fmt.Errorf("procstat: %w", err)
	}
	rss, hwm, err := parseStatus(status)
	if err != nil {
		return Sample{}, err
	}
	return Sample{CPU: cpu, RSS: rss, PeakRSS: hwm}, nil
}

// parseStat returns utime+stime from the content of /proc/<pid>/stat. The
// command name (field 2) may contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("procstat: malformed stat: no command name")
	}
	// After ") " come fields 3.. (state is field 3); utime and stime are
	// fields 14 and 15, i.e. indexes 11 and 12 here.
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("procstat: malformed stat: %d fields after the command", len(f))
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("procstat: malformed stat: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// parseStatus returns VmRSS and VmHWM in bytes from /proc/<pid>/status.
func parseStatus(b []byte) (rss, hwm int64, err error) {
	var haveRSS, haveHWM bool
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("procstat: malformed %s line %q", k, v)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("procstat: malformed %s: %w", k, err)
		}
		if k == "VmRSS" {
			rss, haveRSS = n<<10, true
		} else {
			hwm, haveHWM = n<<10, true
		}
	}
	if !haveRSS || !haveHWM {
		return 0, 0, errors.New("procstat: status has no VmRSS or VmHWM (kernel thread or zombie?)")
	}
	return rss, hwm, nil
}
