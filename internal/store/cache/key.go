package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// Key identifies one cacheable result.
type Key struct {
	// Tenant isolates tenants from each other.
	Tenant string
	// Scope is the principal's visible scope: principals that may see different data must have different
	// scopes, so a result computed for one is never served to the other.
	Scope string
	// Tool and Version name the tool contract; a new version never reads an older version's results.
	Tool, Version string
	// Domain is the data domain the tool reads; InvalidateDomain(Tenant, Domain) drops the entry.
	Domain string
	// Data is the version of the data the result was computed from, when the tool answers from data a process
	// loads (the knowledge set): empty otherwise. Processes with different data never share results.
	Data string
	// Args are the canonical bytes of the arguments, e.g. a deterministic proto marshal: equal arguments
	// must have equal bytes, or identical calls miss each other.
	Args []byte
}

// keyTag separates these hashes from any other SHA-256 use and lets a future layout change every key at once.
const (
	keyTag    = "toolsvc/cache.Key/v1"
	domainTag = "toolsvc/cache.domain/v1"
)

// String returns the key as 64 hex digits: the SHA-256 of every field, each preceded by its length, so that
// ("a", "bc") and ("ab", "c") hash differently. It is stable across processes and releases of this package
// version, which Redis relies on.
func (k Key) String() string {
	var stack [256]byte // most keys fit, so hashing does not allocate
	buf := stack[:0]
	for _, f := range [...]string{keyTag, k.Tenant, k.Scope, k.Tool, k.Version, k.Domain} {
		buf = appendField(buf, f)
	}
	if k.Data != "" {
		// Only when set, so keys without data keep their layout; the length
		// prefixes still tell the two layouts apart.
		buf = appendField(buf, k.Data)
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(k.Args)))
	buf = append(buf, k.Args...)
	return hexSum(buf)
}

// domainID returns a short hash of (tenant, domain) that names its generation counter and, in Redis, the hash
// slot of all its entries.
func domainID(tenant, domain string) string {
	var stack [128]byte
	buf := appendField(appendField(appendField(stack[:0], domainTag), tenant), domain)
	return hexSum(buf)[:32]
}

func appendField(buf []byte, f string) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(f)))
	return append(buf, f...)
}

func hexSum(buf []byte) string {
	sum := sha256.Sum256(buf)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
