package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRefusesBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "remote gRPC target", args: []string{"--grpc-addr", "192.0.2.1:9090"}, want: "loopback"},
		{name: "remote HTTP target", args: []string{"--transport", "rest", "--http", "http://example.com"}, want: "loopback"},
		{name: "unknown tool", args: []string{"--tool", "make-coffee"}, want: "unknown tool"},
		{name: "bad concurrency", args: []string{"--concurrency", "1,x"}, want: "--concurrency"},
		{name: "arguments not JSON", args: []string{"--args", "{nope"}, want: "not JSON"},
		{name: "unknown transport", args: []string{"--transport", "smtp"}, want: "unknown transport"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
}

func TestReadArgs(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	_ = os.WriteFile(good, []byte("{\"query\":\"a\"}\n\n{\"query\":\"b\"}\n"), 0o600)
	_ = os.WriteFile(bad, []byte("{\"query\":\"a\"}\nnope\n"), 0o600)
	tests := []struct {
		name    string
		inline  string
		file    string
		want    int
		wantErr bool
	}{
		{name: "inline", inline: `{"a":1}`, want: 1},
		{name: "file skips blank lines", file: good, want: 2},
		{name: "file with a bad line", file: bad, wantErr: true},
		{name: "missing file", file: filepath.Join(dir, "absent"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readArgs(tt.inline, tt.file)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if len(got) != tt.want {
				t.Errorf("%d arguments, want %d", len(got), tt.want)
			}
		})
	}
}
