package drivers

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
)

// ErrNotLoopback is returned for a target that is not on this machine.
var ErrNotLoopback = errors.New("drivers: only loopback targets are allowed")

// CheckLoopback accepts "host:port" or an http(s) URL whose host is a
// loopback IP literal or "localhost". Names are never resolved: a DNS
// answer could point anywhere.
func CheckLoopback(target string) error {
	host := target
	if strings.Contains(target, "://") {
		u, err := url.Parse(target)
		if err != nil {
			return fmt.Errorf("drivers: target %q: %w", target, err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("drivers: target %q: scheme must be http or https", target)
		}
		host = u.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%w: %q", ErrNotLoopback, target)
	}
	return nil
}

// Rotation hands out values round robin, safely across workers. A nil or
// empty Rotation hands out the zero value.
type Rotation[T any] struct {
	values []T
	next   atomic.Uint64
}

// NewRotation rotates over values.
func NewRotation[T any](values []T) *Rotation[T] { return &Rotation[T]{values: values} }

// Next returns the next value.
func (r *Rotation[T]) Next() T {
	var zero T
	if r == nil || len(r.values) == 0 {
		return zero
	}
	return r.values[(r.next.Add(1)-1)%uint64(len(r.values))]
}

// Len is the number of values.
func (r *Rotation[T]) Len() int {
	if r == nil {
		return 0
	}
	return len(r.values)
}
