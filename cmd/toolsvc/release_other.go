//go:build !linux

package main

// releaseStartupPages does nothing where the executable's pages are not
// released (release_linux.go).
func releaseStartupPages() int { return 0 }
