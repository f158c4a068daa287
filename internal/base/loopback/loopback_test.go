package loopback

import "testing"

func TestHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.8.9.10": true, "::1": true, "[::1]": true,
		"localhost": true, "LocalHost": true,
		"8.8.8.8": false, "localhost.evil.com": false, "0.0.0.0": false, "": false, "::": false,
	} {
		if got := Host(host); got != want {
			t.Errorf("Host(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestHostPort(t *testing.T) {
	for hp, want := range map[string]bool{
		"localhost": true, "localhost:8080": true, "[::1]:80": true, "[::1]": true, "127.0.0.1:1": true,
		"example.com": false, "example.com:80": false, "10.0.0.1:80": false,
	} {
		if got := HostPort(hp); got != want {
			t.Errorf("HostPort(%q) = %v, want %v", hp, got, want)
		}
	}
}

func TestAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:0": true, "[::1]:9": true,
		":8080": false, "0.0.0.0:80": false, "localhost": false, "10.1.2.3:80": false,
	} {
		if got := Addr(addr); got != want {
			t.Errorf("Addr(%q) = %v, want %v", addr, got, want)
		}
	}
}
