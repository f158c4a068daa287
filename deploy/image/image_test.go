package image_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/toolsvc/toolsvc/deploy/image"
)

// testVersion is the version the test stamps when it builds the image
// itself (without TOOLSVC_IMAGE_LAYOUT).
const testVersion = "0.0.0-imagetest"

// TestImage checks the image `make image` built (TOOLSVC_IMAGE_LAYOUT, an
// OCI layout directory), or one this test builds the same way: its
// configuration, its files, and its binary run as the image would run it.
func TestImage(t *testing.T) {
	img := loadImage(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	version := c.Labels["org.opencontainers.image.version"]
	if version == "" {
		t.Fatalf("no org.opencontainers.image.version label: %v", c.Labels)
	}

	t.Run("configuration", func(t *testing.T) {
		if c.User != "65532:65532" {
			t.Errorf("user %q: want 65532:65532 (non-root)", c.User)
		}
		if !slices.Equal(c.Entrypoint, []string{image.BinaryPath}) {
			t.Errorf("entrypoint %q: want [%s]", c.Entrypoint, image.BinaryPath)
		}
		if !slices.Equal(c.Cmd, []string{"serve"}) {
			t.Errorf("cmd %q: want [serve]", c.Cmd)
		}
		if c.WorkingDir != image.DataDir {
			t.Errorf("working dir %q: want %s", c.WorkingDir, image.DataDir)
		}
		if cf.OS != "linux" || cf.Architecture == "" {
			t.Errorf("platform %s/%s: want linux/<arch>", cf.OS, cf.Architecture)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.MediaType != "application/vnd.oci.image.manifest.v1+json" {
			t.Errorf("manifest media type %s: want OCI", m.MediaType)
		}
	})

	root, entries := extract(t, img)

	t.Run("files: the binary and a non-root system, no shell", func(t *testing.T) {
		want := []string{
			"etc", "etc/group", "etc/passwd", "etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt",
			"etc/toolsvc", "etc/toolsvc/knowledge", "etc/toolsvc/toolsvc.yaml",
			"tmp", "usr", "usr/local", "usr/local/bin", "usr/local/bin/toolsvc",
			"var", "var/lib", "var/lib/toolsvc",
		}
		var got []string
		for name := range entries {
			got = append(got, name)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("files:\n got %q\nwant %q", got, want)
		}
		for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
			if _, ok := entries[sh]; ok {
				t.Errorf("the image has a shell: %s", sh)
			}
		}
		if h := entries["var/lib/toolsvc"]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != image.UID || h.Gid != image.GID {
			t.Errorf("data directory not owned by %d:%d: %+v", image.UID, image.GID, h)
		}
		if h := entries["usr/local/bin/toolsvc"]; h == nil || h.Uid != 0 || h.Mode&0o022 != 0 {
			t.Errorf("binary must be root-owned and not writable by the user: %+v", h)
		}
		passwd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(passwd), "nonroot:x:65532:65532:") {
			t.Errorf("/etc/passwd has no nonroot user:\n%s", passwd)
		}
	})

	t.Run("version is stamped", func(t *testing.T) {
		out, err := exec.CommandContext(t.Context(), filepath.Join(root, image.BinaryPath), "version").CombinedOutput()
		if err != nil {
			t.Fatalf("toolsvc version: %v\n%s", err, out)
		}
		if !strings.HasPrefix(string(out), "toolsvc "+version+" ") {
			t.Errorf("toolsvc version printed %q: want the label's version %s", out, version)
		}
		if rev := c.Labels["org.opencontainers.image.revision"]; rev != "" && !strings.Contains(string(out), rev[:12]) {
			t.Errorf("toolsvc version printed %q: want the label's revision %s", out, rev[:12])
		}
	})

	t.Run("the default command refuses to serve anonymous on every interface", func(t *testing.T) {
		cmd := containerCommand(t, root, c, nil)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() == 0 {
			t.Fatalf("default command: %v, want a non-zero exit\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "development mode") || !strings.Contains(stderr.String(), "0.0.0.0:8080") {
			t.Errorf("default command's refusal does not say why:\n%s", stderr.String())
		}
	})

	t.Run("serve answers /healthz", func(t *testing.T) {
		// Loopback addresses: development mode, allowed there. Everything
		// else (database, knowledge) comes from the image's configuration.
		cmd := containerCommand(t, root, c, []string{"--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"})
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		addr := make(chan string, 1)
		var logs bytes.Buffer
		go func() {
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				logs.Write(append(sc.Bytes(), '\n'))
				var line struct{ Msg, Addr string }
				if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "HTTP listening" {
					addr <- line.Addr
				}
			}
			exited <- cmd.Wait()
		}()
		var base string
		select {
		case a := <-addr:
			base = "http://" + a
		case err := <-exited:
			t.Fatalf("serve exited before listening: %v\n%s", err, logs.String())
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("serve did not listen\n%s", logs.String())
		}
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var health struct {
			Status  string `json:"status"`
			Version string `json:"version"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &health) != nil || health.Status != "ok" {
			t.Errorf("/healthz: %d %s", resp.StatusCode, body)
		}
		if health.Version != "" && health.Version != version {
			t.Errorf("/healthz version %q: want %s", health.Version, version)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-exited; err != nil {
			t.Errorf("serve after SIGTERM: %v\n%s", err, logs.String())
		}
		if os.Geteuid() == 0 {
			// The store is where the image's configuration puts it, written
			// by the non-root user.
			fi, err := os.Stat(filepath.Join(root, image.DataDir, "toolsvc.db"))
			if err != nil {
				t.Fatalf("no database in the data directory: %v\n%s", err, logs.String())
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != image.UID {
				t.Errorf("database owned by uid %d: want %d", st.Uid, image.UID)
			}
		}
	})
}

// TestBuildIsReproducible builds the image twice from one binary: the
// same digest, so a rebuild of a release can be checked against it.
func TestBuildIsReproducible(t *testing.T) {
	bin := buildBinary(t)
	var digests []v1.Hash
	for range 2 {
		img, err := image.Build(image.Config{Binary: bin, Version: testVersion})
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of one binary: %s and %s", digests[0], digests[1])
	}
}

func TestBuildRefusesWhatCannotRun(t *testing.T) {
	self, err := os.Executable() // a Go binary, but a test binary built with cgo or not: check each rule on its own
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  image.Config
		want string
	}{
		{"no version", image.Config{Binary: self}, "required"},
		{"not a Go binary", image.Config{Binary: "/etc/passwd", Version: "1"}, "not a Go binary"},
		{"missing certificates", image.Config{Binary: buildBinary(t), Version: "1", CACerts: filepath.Join(t.TempDir(), "none.pem")}, "CA certificates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := image.Build(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// loadImage reads TOOLSVC_IMAGE_LAYOUT, or builds the image into a
// temporary layout and reads it back.
func loadImage(t *testing.T) v1.Image {
	t.Helper()
	dir := os.Getenv("TOOLSVC_IMAGE_LAYOUT")
	if dir == "" {
		img, err := image.Build(image.Config{Binary: buildBinary(t), Version: testVersion})
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(t.TempDir(), "oci")
		if err := image.WriteLayout(dir, "toolsvc:"+testVersion, img); err != nil {
			t.Fatal(err)
		}
		if err := image.WriteTarball(filepath.Join(t.TempDir(), "toolsvc.tar"), "toolsvc:"+testVersion, img); err != nil {
			t.Fatal(err)
		}
	}
	img, err := image.ReadLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

var built struct {
	path string
	err  error
}

// buildBinary builds cmd/toolsvc as `make image` does (static, stamped
// with testVersion), once per test binary.
func buildBinary(t *testing.T) string {
	t.Helper()
	if built.path == "" && built.err == nil {
		dir, err := os.MkdirTemp("", "toolsvc-imagetest-")
		if err != nil {
			t.Fatal(err)
		}
		built.path = filepath.Join(dir, "toolsvc")
		cmd := exec.CommandContext(context.Background(), "go", "build", "-trimpath",
			"-ldflags", "-s -w -X github.com/toolsvc/toolsvc/internal/base/version.Version="+testVersion,
			"-o", built.path, "./cmd/toolsvc")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = errors.New(string(out))
		}
	}
	if built.err != nil {
		t.Fatalf("go build ./cmd/toolsvc: %v", built.err)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		_ = os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

// extract unpacks the image's flattened file system into a temporary
// directory, with the owners of the layers when running as root, and
// returns it and its entries by name.
func extract(t *testing.T, img v1.Image) (string, map[string]*tar.Header) {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil { // the container's "/", traversed by the non-root user
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	entries := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[strings.TrimSuffix(path.Clean(h.Name), "/")] = h
		p := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("layer entry %q escapes the root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("layer entry %q has type %c: want files and directories only", h.Name, h.Typeflag)
		}
	}
	// Modes and owners after every entry is written (a read-only
	// directory would refuse its own files otherwise).
	for name, h := range entries {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.Chmod(p, os.FileMode(h.Mode).Perm()|modeBits(h.Mode)); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root, entries
}

func modeBits(m int64) os.FileMode {
	var fm os.FileMode
	if m&0o1000 != 0 {
		fm |= os.ModeSticky
	}
	return fm
}

// containerCommand runs the image's entrypoint and command, with extra
// arguments, as the container would: as root, chrooted into the image's
// file system as the image's user, with its working directory and
// environment only. Without root (no chroot), it runs the binary from the
// extracted tree with the image's configuration file and the database in
// a temporary directory: the user and the paths are then not checked.
func containerCommand(t *testing.T, root string, c v1.Config, extra []string) *exec.Cmd {
	t.Helper()
	args := append(slices.Clone(c.Cmd), extra...)
	if os.Geteuid() == 0 {
		cmd := exec.CommandContext(t.Context(), c.Entrypoint[0], args...)
		cmd.Path = c.Entrypoint[0]
		cmd.Dir = c.WorkingDir
		cmd.Env = c.Env
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Chroot:     root,
			Credential: &syscall.Credential{Uid: image.UID, Gid: image.GID},
		}
		return cmd
	}
	t.Log("not root: the binary runs outside a chroot, as the current user")
	if extra != nil {
		args = append(args, "--db", filepath.Join(t.TempDir(), "toolsvc.db"), "--knowledge-dir", filepath.Join(root, image.KnowledgeDir))
	}
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, c.Entrypoint[0]), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"TOOLSVC_CONFIG=" + filepath.Join(root, image.ConfigPath), "HOME=" + cmd.Dir}
	return cmd
}
