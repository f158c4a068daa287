package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The fleet test's files that compose.yaml mounts: one source for both.
var fleetFiles = []string{"fleet/haproxy.cfg", "fleet/auth.yaml", "fleet/toolsvc.yaml"}

// composeService is the part of a compose service this test reads.
type composeService struct {
	Image       string         `yaml:"image"`
	Build       any            `yaml:"build"`
	Command     []string       `yaml:"command"`
	Environment map[string]any `yaml:"environment"`
	Volumes     []string       `yaml:"volumes"`
	ReadOnly    bool           `yaml:"read_only"`
	StopGrace   string         `yaml:"stop_grace_period"`
}

// TestComposeIsTheFleetTopology reads compose.yaml: PostgreSQL, Redis,
// three toolsvc replicas and HAProxy, configured by the fleet test's own
// files (which exist), every toolsvc flag and TOOLSVC_ variable one of
// `toolsvc serve`, and the shared configuration's keys too.
func TestComposeIsTheFleetTopology(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var replicas []string
	for name, s := range doc.Services {
		if strings.HasPrefix(s.Image, "toolsvc:") {
			replicas = append(replicas, name)
		}
	}
	slices.Sort(replicas)
	if len(replicas) != 3 {
		t.Errorf("toolsvc replicas %v: want 3, as in the fleet test", replicas)
	}
	for _, want := range []string{"postgres", "redis", "haproxy"} {
		if _, ok := doc.Services[want]; !ok {
			t.Errorf("no %s service", want)
		}
	}

	// Every file compose mounts from the repository exists; the fleet
	// test's three are among them.
	mounted := map[string]bool{}
	for name, s := range doc.Services {
		for _, v := range s.Volumes {
			src, _, ok := strings.Cut(v, ":")
			if !ok || !strings.HasPrefix(src, ".") {
				continue // a named volume
			}
			src = filepath.Clean(src)
			mounted[filepath.ToSlash(src)] = true
			if _, err := os.Stat(src); err != nil {
				if strings.HasPrefix(filepath.ToSlash(src), "fleet/") && !exists("fleet") {
					t.Logf("service %s mounts %s: deploy/fleet/ comes with the fleet test's branch", name, src)
					continue
				}
				t.Errorf("service %s mounts %s: %v", name, src, err)
			}
		}
	}
	for _, f := range fleetFiles {
		if !mounted[f] {
			t.Errorf("compose.yaml does not mount the fleet test's %s", f)
		}
	}

	// The replicas are one definition: same image, command, environment
	// and files; flags and variables exist in the binary.
	first := doc.Services[replicas[0]]
	for _, r := range replicas {
		s := doc.Services[r]
		if !slices.Equal(s.Command, first.Command) || !slices.Equal(s.Volumes, first.Volumes) || len(s.Environment) != len(first.Environment) {
			t.Errorf("replica %s differs from %s: the replicas must be one definition", r, replicas[0])
		}
		if len(s.Command) == 0 || s.Command[0] != "serve" {
			t.Fatalf("replica %s command %q: want serve first", r, s.Command)
		}
		if !s.ReadOnly {
			t.Errorf("replica %s: want read_only (the image's root is not written)", r)
		}
	}
	var env []string
	for k := range first.Environment {
		env = append(env, k)
	}
	checkFlags(t, "compose.yaml", append(argFlags(t, "compose.yaml", first.Command[1:]), envFlags(env)...))

	// HAProxy's configuration is the fleet test's: its servers are named
	// by environment variables, which compose sets to the containers.
	if b, err := os.ReadFile("fleet/haproxy.cfg"); err == nil {
		hap := doc.Services["haproxy"]
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) >= 3 && f[0] == "server" && !strings.Contains(f[2], "${") {
				t.Errorf("fleet/haproxy.cfg: %q names a literal address: compose can only reuse servers named by environment variables", strings.TrimSpace(line))
			}
		}
		// Comments may show the syntax ("${VAR}"); only directives count.
		var directives strings.Builder
		for line := range strings.Lines(string(b)) {
			if code, _, _ := strings.Cut(line, "#"); strings.TrimSpace(code) != "" {
				directives.WriteString(code + "\n")
			}
		}
		for _, m := range envRef.FindAllStringSubmatch(directives.String(), -1) {
			if _, ok := hap.Environment[m[1]]; !ok {
				t.Errorf("fleet/haproxy.cfg uses ${%s}, which compose.yaml does not set for haproxy", m[1])
			}
		}
	}

	// The fleet's shared configuration file: each key is a flag.
	if b, err := os.ReadFile("fleet/toolsvc.yaml"); err == nil {
		var keys map[string]any
		if err := yaml.Unmarshal(b, &keys); err != nil {
			t.Fatalf("fleet/toolsvc.yaml: %v", err)
		}
		var names []string
		for k := range keys {
			names = append(names, k)
		}
		checkFlags(t, "fleet/toolsvc.yaml", names)
	}
}

// envRef is an environment variable in an HAProxy configuration.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
