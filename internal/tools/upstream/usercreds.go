package upstream

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsvc/toolsvc/internal/store"
)

// UserCredentialConfig marks an upstream that wants each caller's own
// credential (a personal access token) rather than toolsvc's
// (docs/OPERATIONS.md, "Callers' own credentials for upstreams").
type UserCredentialConfig struct {
	// Required: every call forwards the caller's stored credential as
	// `authorization: Bearer …`, in place of toolsvc's own; a caller
	// without one is refused with a hint naming the tool that stores it.
	// Default false.
	Required bool `yaml:"required"`
}

// Credentials seals callers' own upstream credentials with the operator's
// keys (AES-256-GCM) and keeps only the ciphertext in the store. The
// first key seals; every key opens, so an operator rotates by putting a
// new key first and keeps the old ones until every credential was stored
// again. A credential is sealed to its tenant, subject and upstream: a
// row copied to another caller does not open.
type Credentials struct {
	st   store.UserCredentialStore
	keys []sealKey
}

type sealKey struct {
	id   string
	aead cipher.AEAD
}

// NewCredentials parses keys ("id:base64 of 32 bytes", the first sealing).
func NewCredentials(st store.UserCredentialStore, keys []string) (*Credentials, error) {
	c := &Credentials{st: st}
	seen := map[string]bool{}
	for i, k := range keys {
		id, b64key, ok := strings.Cut(strings.TrimSpace(k), ":")
		if !ok || id == "" {
			return nil, fmt.Errorf("credential key %d: want id:base64 of 32 bytes", i+1)
		}
		raw, err := base64.StdEncoding.DecodeString(b64key)
		if err != nil || len(raw) != 32 {
			return nil, fmt.Errorf("credential key %q: want the base64 of 32 random bytes (openssl rand -base64 32)", id)
		}
		if seen[id] {
			return nil, fmt.Errorf("credential key %q is given twice", id)
		}
		seen[id] = true
		block, _ := aes.NewCipher(raw)
		aead, _ := cipher.NewGCM(block)
		c.keys = append(c.keys, sealKey{id: id, aead: aead})
	}
	if len(c.keys) == 0 {
		return nil, errors.New("no credential key")
	}
	return c, nil
}

func aad(tenant, subject, upstream string) []byte {
	return []byte(tenant + "\x1f" + subject + "\x1f" + upstream)
}

// Put seals and stores the caller's credential for upstream, replacing
// the one stored before.
func (c *Credentials) Put(ctx context.Context, tenant, subject, upstream, secret string) error {
	k := c.keys[0]
	nonce := make([]byte, k.aead.NonceSize())
	_, _ = rand.Read(nonce)
	sealed := k.aead.Seal(nonce, nonce, []byte(secret), aad(tenant, subject, upstream))
	return c.st.PutUserCredential(ctx, &store.UserCredential{Tenant: tenant, Subject: subject, Upstream: upstream, Sealed: sealed, KeyID: k.id})
}

// Delete deletes it and reports whether there was one.
func (c *Credentials) Delete(ctx context.Context, tenant, subject, upstream string) (bool, error) {
	return c.st.DeleteUserCredential(ctx, tenant, subject, upstream)
}

// errNoCredential: the caller stored none (or none that opens).
var errNoCredential = errors.New("no stored credential")

// open returns the caller's credential for upstream, errNoCredential when
// there is none, or none that opens with the keys given (its key was
// retired: the caller stores it again).
func (c *Credentials) open(ctx context.Context, tenant, subject, upstream string) (string, error) {
	uc, err := c.st.UserCredential(ctx, tenant, subject, upstream)
	if errors.Is(err, store.ErrNotFound) {
		return "", errNoCredential
	}
	if err != nil {
		return "", err
	}
	for _, k := range c.keys {
		if k.id != uc.KeyID || len(uc.Sealed) < k.aead.NonceSize() {
			continue
		}
		n := k.aead.NonceSize()
		plain, err := k.aead.Open(nil, uc.Sealed[:n], uc.Sealed[n:], aad(tenant, subject, upstream))
		if err != nil {
			return "", fmt.Errorf("%w: the stored credential does not open with key %s", errNoCredential, k.id)
		}
		return string(plain), nil
	}
	return "", fmt.Errorf("%w: it was sealed with key %s, which is no longer given", errNoCredential, uc.KeyID)
}
