// Command mkimage builds toolsvc's container image from a static Linux
// binary, without a Docker daemon or a base image (package image), and
// writes it as an OCI image layout and optionally a `docker load` tarball.
//
//	mkimage -binary bin/image/toolsvc -version 0.1.0 -layout bin/image/oci -tarball bin/image/toolsvc.tar
//
// `make image` builds the binary and runs this.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/toolsvc/toolsvc/deploy/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	binary := fs.String("binary", "", "static linux toolsvc binary (CGO_ENABLED=0)")
	version := fs.String("version", "", "the version the binary was stamped with")
	repo := fs.String("repository", "toolsvc", "image name the layout and the tarball tag it with, version as the tag")
	out := fs.String("layout", "", "directory of the OCI image layout to write (replaced)")
	tarPath := fs.String("tarball", "", "also write a `docker load` tarball here (optional)")
	certs := fs.String("ca-certs", image.CACertsPath, "PEM bundle of CA certificates to include")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *binary == "" || *version == "" || *out == "" {
		return fmt.Errorf("-binary, -version and -layout are required")
	}
	cfg := image.Config{Binary: *binary, Version: *version, CACerts: *certs}
	// SOURCE_DATE_EPOCH (reproducible-builds.org) fixes the image's time;
	// without it, the commit time stamped in the binary does.
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since the epoch", s)
		}
		cfg.Created = time.Unix(sec, 0)
	}
	img, err := image.Build(cfg)
	if err != nil {
		return err
	}
	ref := *repo + ":" + *version
	if err := image.WriteLayout(*out, ref, img); err != nil {
		return err
	}
	if *tarPath != "" {
		if err := image.WriteTarball(*tarPath, ref, img); err != nil {
			return err
		}
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s → %s", ref, digest, *out)
	if *tarPath != "" {
		fmt.Printf(" and %s", *tarPath)
	}
	fmt.Println()
	return nil
}
