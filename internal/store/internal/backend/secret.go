package backend

import "crypto/rand"

// NewSecret returns 32 random bytes, a store secret's value.
func NewSecret() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails since Go 1.24 (it crashes instead)
	return b
}
