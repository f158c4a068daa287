// Package loopback answers one question the transports, the server and the
// tools all ask: does this host, Host header or listen address name only
// the local machine? (docs/ARCHITECTURE.md: libraries depend on no layer.)
package loopback

import (
	"net"
	"strings"
)

// Host reports whether host (a bare name or IP, brackets allowed around an
// IPv6 literal) is "localhost", in any case, or a loopback IP.
func Host(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// HostPort reports whether a Host header, "host" or "host:port", names a
// loopback host.
func HostPort(hostport string) bool {
	return Host(Hostname(hostport))
}

// Hostname is the host part of "host" or "host:port", without brackets.
func Hostname(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

// Addr reports whether a listen address (host:port) binds only loopback
// interfaces. An empty host (":8080") means every interface: not loopback;
// an address without a port is not a listen address: not loopback.
func Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	return host != "" && Host(host)
}
