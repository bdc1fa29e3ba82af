package quic

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"
)

// ALPN is the application protocol every scalegate QUIC connection
// negotiates. quic-go refuses a handshake without one.
const ALPN = "scalegate/1"

// serverName is the SNI the client sends and the self-signed certificate's
// DNS name.
const serverName = "scalegate.invalid"

// serverTLS returns the server's TLS configuration: the configured
// certificate, or a fresh self-signed ed25519 one.
func serverTLS(certFile, keyFile string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case certFile != "" && keyFile != "":
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("quic: load certificate %s / key %s: %w", certFile, keyFile, err)
		}
	case certFile != "" || keyFile != "":
		return nil, fmt.Errorf("quic: CertFile (%q) and KeyFile (%q) must be given together", certFile, keyFile)
	default:
		cert, err = selfSigned(time.Now())
		if err != nil {
			return nil, err
		}
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{ALPN},
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// selfSigned generates an ed25519 certificate valid for a day around now.
func selfSigned(now time.Time) (tls.Certificate, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("quic: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("quic: certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "scalegate load server"},
		DNSNames:     []string{serverName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("quic: create certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: priv}, nil
}

// clientTLS returns the client's TLS configuration. The client does not
// verify the server certificate: scalegate is a load tool that talks to a
// server it launched itself on loopback, where the certificate is generated
// per run and there is no channel to distribute it. What the gate measures
// (AEAD on every packet, the TLS 1.3 handshake, QUIC framing) is identical
// with or without verification; authenticity is not under test.
func clientTLS() *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // see the doc comment: loopback load tool
		NextProtos:         []string{ALPN},
		ServerName:         serverName,
		MinVersion:         tls.VersionTLS13,
	}
}
