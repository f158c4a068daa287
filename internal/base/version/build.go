package version

import (
	"runtime/debug"
	"sync"
)

// Build describes the binary: its version, the commit it was built from
// and the Go toolchain. Commit is "unknown" when the build carried no VCS
// stamp (go build -buildvcs=false, or a build outside a git checkout), and
// Modified says the checkout had uncommitted changes.
type Build struct {
	Version   string
	Commit    string
	Time      string
	Modified  bool
	GoVersion string
}

// Info returns the build description, read once from the binary.
var Info = sync.OnceValue(func() Build {
	b := Build{Version: Version, Commit: "unknown", GoVersion: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
})

// String is the one line `toolsvc version` prints, e.g.
// "toolsvc 0.1.0 (commit 2ce77e9c1a0b, 2026-11-25T03:52:13Z, go1.26.8)".
func (b Build) String() string {
	commit := b.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if b.Modified {
		commit += "+dirty"
	}
	s := Name + " " + b.Version + " (commit " + commit
	if b.Time != "" {
		s += ", " + b.Time
	}
	return s + ", " + b.GoVersion + ")"
}
