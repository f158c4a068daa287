package auth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolsvc/toolsvc/internal/auth"
)

func ExampleLoadFile() {
	dir, err := os.MkdirTemp("", "auth-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// The auth file holds only the SHA-256 of the key.
	const key = "tsk_example_3c0f9d1e2b7a4f60"
	path := filepath.Join(dir, "auth.yaml")
	content := fmt.Sprintf(`api_keys:
  - key_sha256: %q
    subject: svc-billing
    tenant: acme
    permissions: ["memory:*", "knowledge:read"]
`, auth.HashKey(key))
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		panic(err)
	}

	cfg, err := auth.LoadFile(path)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	a, err := auth.New(ctx, cfg)
	if err != nil {
		panic(err)
	}

	p, err := a.Authenticate(ctx, "Bearer "+key)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Subject, p.Tenant, p.Method)
	fmt.Println(p.Allows("memory:write"), p.Allows("knowledge:write"))

	_, err = a.Authenticate(ctx, "Bearer not-the-key")
	var ae *auth.Error
	if errors.As(err, &ae) {
		fmt.Println(ae.Reason == auth.InvalidCredentials, err)
	}
	// Output:
	// svc-billing acme api_key
	// true false
	// true unauthenticated: invalid credentials
}
