package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupPages unmaps from this process the pages of its own
// executable that start-up read (package initialisation, the registry's
// construction, schema derivation: code and read-only data a served call
// never runs or reads again), so that the resident set of an idle server
// is what serving uses. Only the executable's read-only mappings (code
// and read-only data: never written, so identical to the file) are
// released; the kernel maps a page back, from its page cache, the next
// time it is used. It returns the bytes of the mappings advised.
func releaseStartupPages() int {
	exe, err := os.Executable()
	if err != nil {
		return 0
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0
	}
	defer f.Close()
	released := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00400000-01873000 r-xp 00000000 fd:01 123 /path/to/exe
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe || strings.ContainsAny(fields[1], "w") || fields[1][0] != 'r' {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		// The raw call: the range is not Go memory, nothing to make a
		// slice of.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED); errno == 0 {
			released += int(end - start)
		}
	}
	return released
}
