// Package image builds toolsvc's container image from a static Linux
// binary, without a Docker daemon and without pulling a base image: the
// image is FROM scratch, with two layers written here (the base files of a
// non-root system, then the binary) and an OCI image configuration.
//
// The result is written as an OCI image layout (a directory that podman,
// skopeo, crane, containerd and registries read) and, optionally, as a
// `docker load` tarball. Builds are reproducible: the same binary and
// certificates give the same image digest, because every file in the
// layers carries the build time given (SOURCE_DATE_EPOCH) and a fixed
// owner.
package image

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed layout. The Dockerfile at the repository root builds
// the same files at the same paths: keep the two in step.
const (
	// UID and GID of the user the image runs as: distroless's "nonroot",
	// so that a cluster policy written for distroless images fits.
	UID = 65532
	GID = 65532
	// BinaryPath is the entrypoint.
	BinaryPath = "/usr/local/bin/toolsvc"
	// DataDir is the only directory the user may write besides /tmp: the
	// SQLite database and anything else toolsvc keeps. It is the working
	// directory and $HOME, so relative or home-based defaults land there.
	DataDir = "/var/lib/toolsvc"
	// ConfigPath is the image's default configuration, named by
	// $TOOLSVC_CONFIG: flags and TOOLSVC_* variables override each key.
	ConfigPath = "/etc/toolsvc/toolsvc.yaml"
	// KnowledgeDir is an empty directory, the default knowledge set;
	// mount the operator's items over it.
	KnowledgeDir = "/etc/toolsvc/knowledge"
	// CACertsPath is where Go's crypto/x509 looks first on Linux.
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// HTTPPort and GRPCPort are the ports the default configuration binds.
	HTTPPort = 8080
	GRPCPort = 9090
)

// DefaultConfig is the image's /etc/toolsvc/toolsvc.yaml. It binds every
// interface, which toolsvc refuses without an auth file: the container
// does not start anonymous by accident (secure by default). Give the auth
// file with TOOLSVC_AUTH_FILE or --auth-file.
const DefaultConfig = `# toolsvc in a container (the image's defaults; docs/OPERATIONS.md).
# Flags and TOOLSVC_<FLAG> environment variables override each key, or
# mount another file here. Listening on every interface needs an auth file:
# set TOOLSVC_AUTH_FILE (or --auth-file) to a mounted file.
http-addr: 0.0.0.0:8080
grpc-addr: 0.0.0.0:9090
db: /var/lib/toolsvc/toolsvc.db
knowledge-dir: /etc/toolsvc/knowledge
`

// Config says what to build.
type Config struct {
	// Binary is the toolsvc executable: linux, built with CGO_ENABLED=0
	// (the image has no C library). Required.
	Binary string
	// CACerts is a PEM bundle of CA certificates for outbound TLS
	// (PostgreSQL, Redis, OTLP, JWKS, upstreams). Default: the build
	// host's /etc/ssl/certs/ca-certificates.crt.
	CACerts string
	// Version is the version the binary was stamped with (-X ...version.Version),
	// recorded in the image's labels. Required.
	Version string
	// Created is the image's creation time and every file's modification
	// time. Zero: the commit time stamped in the binary, else the Unix epoch,
	// so that builds are reproducible.
	Created time.Time
}

// Build makes the image from cfg.
func Build(cfg Config) (v1.Image, error) {
	if cfg.Binary == "" || cfg.Version == "" {
		return nil, errors.New("image: the binary and its version are required")
	}
	if cfg.CACerts == "" {
		cfg.CACerts = CACertsPath
	}
	info, err := buildinfo.ReadFile(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: %s is not a Go binary: %w", cfg.Binary, err)
	}
	set := map[string]string{}
	for _, s := range info.Settings {
		set[s.Key] = s.Value
	}
	if set["GOOS"] != "linux" {
		return nil, fmt.Errorf("image: %s is built for GOOS=%s: want linux", cfg.Binary, set["GOOS"])
	}
	if set["CGO_ENABLED"] != "0" {
		return nil, fmt.Errorf("image: %s was built with cgo: build it with CGO_ENABLED=0, the image has no C library", cfg.Binary)
	}
	revision := set["vcs.revision"]
	if cfg.Created.IsZero() {
		cfg.Created = time.Unix(0, 0)
		if t, err := time.Parse(time.RFC3339, set["vcs.time"]); err == nil {
			cfg.Created = t
		}
	}
	cfg.Created = cfg.Created.UTC()

	certs, err := os.ReadFile(cfg.CACerts)
	if err != nil {
		return nil, fmt.Errorf("image: CA certificates: %w", err)
	}
	base, err := layer(cfg.Created, baseFiles(certs))
	if err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(cfg.Binary)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	app, err := layer(cfg.Created, []file{
		{path: "usr/", dir: true, mode: 0o755},
		{path: "usr/local/", dir: true, mode: 0o755},
		{path: "usr/local/bin/", dir: true, mode: 0o755},
		{path: strings.TrimPrefix(BinaryPath, "/"), mode: 0o755, data: bin},
	})
	if err != nil {
		return nil, err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: cfg.Created}, CreatedBy: "toolsvc deploy/image: nonroot user, CA certificates, default configuration", Comment: "base"}},
		mutate.Addendum{Layer: app, History: v1.History{Created: v1.Time{Time: cfg.Created}, CreatedBy: "toolsvc deploy/image: " + BinaryPath, Comment: "binary"}},
	)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture = set["GOARCH"]
	cf.OS = "linux"
	cf.Created = v1.Time{Time: cfg.Created}
	labels := map[string]string{
		"org.opencontainers.image.title":       "toolsvc",
		"org.opencontainers.image.description": "Agent tools defined as protobuf contracts, served over gRPC, MCP and REST",
		"org.opencontainers.image.version":     cfg.Version,
		"org.opencontainers.image.created":     cfg.Created.Format(time.RFC3339),
		"org.opencontainers.image.source":      "https://github.com/toolsvc/toolsvc",
	}
	if revision != "" {
		labels["org.opencontainers.image.revision"] = revision
	}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: []string{BinaryPath},
		Cmd:        []string{"serve"},
		WorkingDir: DataDir,
		Env: []string{
			"PATH=/usr/local/bin",
			"HOME=" + DataDir,
			"TOOLSVC_CONFIG=" + ConfigPath,
			"SSL_CERT_FILE=" + CACertsPath,
		},
		ExposedPorts: map[string]struct{}{
			fmt.Sprintf("%d/tcp", HTTPPort): {},
			fmt.Sprintf("%d/tcp", GRPCPort): {},
		},
		Volumes:    map[string]struct{}{DataDir: {}},
		Labels:     labels,
		StopSignal: "SIGTERM",
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("image: %w", err)
	}
	return img, nil
}

// baseFiles are the files of the first layer: what a program running as
// a non-root user on scratch needs, and nothing else (no shell, no
// package manager, no libraries).
func baseFiles(certs []byte) []file {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, GID, DataDir)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	return []file{
		{path: "etc/", dir: true, mode: 0o755},
		{path: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "etc/group", mode: 0o644, data: []byte(group)},
		{path: "etc/ssl/", dir: true, mode: 0o755},
		{path: "etc/ssl/certs/", dir: true, mode: 0o755},
		{path: strings.TrimPrefix(CACertsPath, "/"), mode: 0o644, data: certs},
		{path: "etc/toolsvc/", dir: true, mode: 0o755},
		{path: strings.TrimPrefix(ConfigPath, "/"), mode: 0o644, data: []byte(DefaultConfig)},
		{path: strings.TrimPrefix(KnowledgeDir, "/") + "/", dir: true, mode: 0o755},
		{path: "tmp/", dir: true, mode: 0o1777},
		{path: "var/", dir: true, mode: 0o755},
		{path: "var/lib/", dir: true, mode: 0o755},
		{path: strings.TrimPrefix(DataDir, "/") + "/", dir: true, mode: 0o700, uid: UID, gid: GID},
	}
}

// file is one entry of a layer.
type file struct {
	path     string
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

// layer writes files as an uncompressed tar (in order, with fixed times
// and owners, so the digest depends on the content only) and returns it
// as a gzip-compressed OCI layer.
func layer(mtime time.Time, files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.path,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image: layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("image: layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image: layer: %w", err)
	}
	return l, nil
}

// WriteLayout writes img as the only image of a fresh OCI image layout in
// dir (removed first), named ref (e.g. "toolsvc:0.1.0") by the
// org.opencontainers.image.ref.name annotation that podman, skopeo and
// crane read.
func WriteLayout(dir, ref string, img v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	// The blobs, then the index entry written here rather than by
	// AppendImage, which would mark the image an artifact (artifactType),
	// and without its platform.
	if err := p.WriteImage(img); err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	mt, err := img.MediaType()
	if err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	size, err := img.Size()
	if err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	if err := p.AppendDescriptor(v1.Descriptor{
		MediaType:   mt,
		Size:        size,
		Digest:      digest,
		Platform:    &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
		Annotations: map[string]string{"org.opencontainers.image.ref.name": ref},
	}); err != nil {
		return fmt.Errorf("image: layout: %w", err)
	}
	return nil
}

// WriteTarball writes img as a `docker load` archive tagged ref.
func WriteTarball(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image: tag %q: %w", ref, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("image: tarball: %w", err)
	}
	return nil
}

// ReadLayout returns the only image of the OCI image layout in dir.
func ReadLayout(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("image: layout %s: %w", dir, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("image: layout %s: %w", dir, err)
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("image: layout %s holds %d manifests: want 1", dir, len(m.Manifests))
	}
	img, err := idx.Image(m.Manifests[0].Digest)
	if err != nil {
		return nil, fmt.Errorf("image: layout %s: %w", dir, err)
	}
	return img, nil
}
