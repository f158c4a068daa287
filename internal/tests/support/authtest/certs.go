package authtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"testing"
	"time"
)

// CA is a certificate authority for TLS tests: it signs server and client
// certificates.
type CA struct {
	// Cert is the CA's self-signed certificate.
	Cert *x509.Certificate
	// PEM is Cert in PEM, the content of a CA file.
	PEM []byte
	key *ecdsa.PrivateKey
}

// NewCA returns a CA named name, valid from an hour ago for a day.
func NewCA(tb testing.TB, name string) *CA {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

// Pool returns a certificate pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// CertSpec describes a certificate to issue. Zero NotBefore and NotAfter
// mean valid from an hour ago for a day.
type CertSpec struct {
	// Subject is the certificate's subject; CommonName alone is enough.
	Subject pkix.Name
	// DNSNames, IPs and URIs are the subject alternative names.
	DNSNames []string
	IPs      []net.IP
	URIs     []string
	// NotBefore and NotAfter bound the validity.
	NotBefore, NotAfter time.Time
	// Client makes a client certificate; else a server one.
	Client bool
}

// Issued is a certificate with its key, in PEM and ready for crypto/tls.
type Issued struct {
	CertPEM, KeyPEM []byte
	TLS             tls.Certificate
	Leaf            *x509.Certificate
}

// Issue signs a certificate for spec.
func (ca *CA) Issue(tb testing.TB, spec CertSpec) *Issued {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	if spec.NotBefore.IsZero() {
		spec.NotBefore = time.Now().Add(-time.Hour)
	}
	if spec.NotAfter.IsZero() {
		spec.NotAfter = time.Now().Add(24 * time.Hour)
	}
	usage := x509.ExtKeyUsageServerAuth
	if spec.Client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb), Subject: spec.Subject, DNSNames: spec.DNSNames, IPAddresses: spec.IPs,
		NotBefore: spec.NotBefore, NotAfter: spec.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	for _, u := range spec.URIs {
		parsed, err := url.Parse(u)
		if err != nil {
			tb.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		tb.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	out := &Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	if out.TLS, err = tls.X509KeyPair(out.CertPEM, out.KeyPEM); err != nil {
		tb.Fatal(err)
	}
	if out.Leaf, err = x509.ParseCertificate(der); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Localhost issues a server certificate for localhost and 127.0.0.1.
func (ca *CA) Localhost(tb testing.TB) *Issued {
	tb.Helper()
	return ca.Issue(tb, CertSpec{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}})
}

func serial(tb testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
