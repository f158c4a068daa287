package toolsvc

import (
	"crypto/sha256"
	"encoding/hex"
)

// hashKey is auth.HashKey: the hex SHA-256 an auth file stores.
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
