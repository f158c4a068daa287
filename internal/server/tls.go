package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// tlsCheckInterval is how often, at most, a handshake looks at the
// certificate files again.
const tlsCheckInterval = time.Second

// tlsFiles serves the certificate, key and client CA of --tls-cert,
// --tls-key and --tls-client-ca to both listeners, and re-reads them when
// one of the files changes (its modification time or size): a renewed
// certificate is served from the next handshake on, without a restart.
// A change that does not load (a key that does not match its certificate
// while the two are being replaced, say) is logged and the last good
// files stay in use.
type tlsFiles struct {
	cert, key, clientCA string
	logger              *slog.Logger
	interval            time.Duration
	now                 func() time.Time

	mu        sync.Mutex
	checkedAt time.Time
	stamp     string // of the files last tried, loaded or not
	snap      *tlsSnapshot
}

// tlsSnapshot is one loaded set of files and the configurations built from
// it, one per list of application protocols.
type tlsSnapshot struct {
	cert      tls.Certificate
	clientCAs *x509.CertPool

	mu      sync.Mutex
	configs map[string]*tls.Config
}

// newTLSFiles loads the files once; an error here stops the start.
func newTLSFiles(cert, key, clientCA string, logger *slog.Logger) (*tlsFiles, error) {
	f := &tlsFiles{cert: cert, key: key, clientCA: clientCA, logger: logger, interval: tlsCheckInterval, now: time.Now}
	stamp, err := f.fileStamp()
	if err != nil {
		return nil, err
	}
	snap, err := f.load()
	if err != nil {
		return nil, err
	}
	f.stamp, f.snap, f.checkedAt = stamp, snap, f.now()
	return f, nil
}

// serverConfig is the listener configuration: TLS 1.2 or later, with the
// current files chosen at each handshake. protos are the ALPN protocols
// the listener speaks.
func (f *tlsFiles) serverConfig(protos ...string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: protos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return f.current().config(f.clientCA != "", protos), nil
		},
	}
}

// current returns the snapshot to serve, reloading it first when a file
// changed since the last look (at most once per interval).
func (f *tlsFiles) current() *tlsSnapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if now.Sub(f.checkedAt) < f.interval {
		return f.snap
	}
	f.checkedAt = now
	stamp, err := f.fileStamp()
	if err != nil || stamp == f.stamp {
		if err != nil && stamp != f.stamp {
			f.logger.Warn("TLS files unreadable; serving the last good certificate", slog.String("error", err.Error()))
		}
		f.stamp = stamp
		return f.snap
	}
	f.stamp = stamp
	snap, err := f.load()
	if err != nil {
		f.logger.Warn("TLS files changed but do not load; serving the last good certificate", slog.String("error", err.Error()))
		return f.snap
	}
	f.snap = snap
	f.logger.Info("TLS files reloaded", slog.String("subject", snap.leafSubject()), slog.Time("not_after", snap.notAfter()))
	return snap
}

// fileStamp identifies the present version of the files.
func (f *tlsFiles) fileStamp() (string, error) {
	var b strings.Builder
	for _, p := range []string{f.cert, f.key, f.clientCA} {
		if p == "" {
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return "unreadable", err
		}
		fmt.Fprintf(&b, "%d/%d;", st.ModTime().UnixNano(), st.Size())
	}
	return b.String(), nil
}

// load reads the files into a snapshot.
func (f *tlsFiles) load() (*tlsSnapshot, error) {
	cert, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", f.cert, f.key, err)
	}
	s := &tlsSnapshot{cert: cert, configs: map[string]*tls.Config{}}
	if now := f.now(); now.After(s.notAfter()) {
		f.logger.Warn("TLS certificate has expired; clients will refuse it", slog.String("file", f.cert), slog.Time("not_after", s.notAfter()))
	}
	if f.clientCA != "" {
		pem, err := os.ReadFile(f.clientCA)
		if err != nil {
			return nil, fmt.Errorf("TLS client CA: %w", err)
		}
		s.clientCAs = x509.NewCertPool()
		if !s.clientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS client CA %s: no PEM certificate in it", f.clientCA)
		}
	}
	return s, nil
}

// config is the handshake configuration of this snapshot for protos:
// mutual TLS requires and verifies a client certificate signed by the
// client CA.
func (s *tlsSnapshot) config(mutual bool, protos []string) *tls.Config {
	key := strings.Join(protos, ",")
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.configs[key]; ok {
		return c
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{s.cert}, NextProtos: protos}
	if mutual {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, s.clientCAs
	}
	s.configs[key] = c
	return c
}

func (s *tlsSnapshot) leaf() *x509.Certificate {
	if s.cert.Leaf != nil {
		return s.cert.Leaf
	}
	if len(s.cert.Certificate) > 0 {
		if l, err := x509.ParseCertificate(s.cert.Certificate[0]); err == nil {
			return l
		}
	}
	return &x509.Certificate{}
}

func (s *tlsSnapshot) leafSubject() string { return s.leaf().Subject.String() }
func (s *tlsSnapshot) notAfter() time.Time { return s.leaf().NotAfter }

// grpcCredentials are the gRPC server's transport credentials (h2).
func (f *tlsFiles) grpcCredentials() credentials.TransportCredentials {
	return credentials.NewTLS(f.serverConfig("h2"))
}

// withTLSPeer puts the TLS state of an HTTPS request into its context as
// a gRPC peer, the form in which the in-process channel hands it to the
// chain's authentication step: a client certificate then authenticates a
// REST or MCP call exactly as it does a gRPC one.
func withTLSPeer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			r = r.WithContext(peer.NewContext(r.Context(), &peer.Peer{
				Addr:     remoteAddr(r.RemoteAddr),
				AuthInfo: credentials.TLSInfo{State: *r.TLS, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}},
			}))
		}
		next.ServeHTTP(w, r)
	})
}

// remoteAddr is the request's remote address as a net.Addr.
type remoteAddr string

func (remoteAddr) Network() string  { return "tcp" }
func (a remoteAddr) String() string { return string(a) }

// errNoTLS is returned for TLS-only settings without a certificate.
var errNoTLS = errors.New("--tls-client-ca needs --tls-cert and --tls-key: mutual TLS is TLS first")
