package ws

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// serverTLS is a wss server's TLS configuration: the configured
// certificate, or a fresh self-signed one for loopback (127.0.0.1, ::1,
// localhost), which a client trusts only through Options.CAFile.
func serverTLS(certFile, keyFile string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case certFile != "" && keyFile != "":
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load certificate %s / key %s: %w", certFile, keyFile, err)
		}
	case certFile != "" || keyFile != "":
		return nil, fmt.Errorf("CertFile (%q) and KeyFile (%q) must be given together", certFile, keyFile)
	default:
		der, key, err := SelfSigned(time.Now())
		if err != nil {
			return nil, err
		}
		cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"http/1.1"}, // WebSocket upgrades are HTTP/1.1
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// SelfSigned returns a DER certificate and its ed25519 key, valid for a day
// around now, for 127.0.0.1, ::1 and localhost: what a wss server on
// loopback presents when it is given no certificate, and what tests write
// to files to give a server a certificate its client trusts (CAFile).
func SelfSigned(now time.Time) (der []byte, key ed25519.PrivateKey, err error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "scalegate wss loopback"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // it is its own root, so a client can trust it as a CA
	}
	der, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate: %w", err)
	}
	return der, key, nil
}

// maxCABytes bounds the CA file a wss client reads (a bundle of every
// public root is about 200 KB); caReadTimeout its read.
const (
	maxCABytes    = 4 << 20
	caReadTimeout = 10 * time.Second
)

// clientTLS is a wss client's TLS configuration: the system's roots plus
// the certificates in caFile. Unlike QUIC's client, which talks only to a
// server scalegate launched, a WebSocket bot may be pointed at a team's
// staging server, so the certificate is verified.
func clientTLS(caFile string) (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if caFile != "" {
		ctx, cancel := context.WithTimeout(context.Background(), caReadTimeout)
		pem, err := boundedfile.ReadFile(ctx, caFile, maxCABytes)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("CAFile: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CAFile %s: no PEM certificate in it", caFile)
		}
	}
	return &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}, nil
}
