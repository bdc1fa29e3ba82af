package ws

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// TestMain fails the package's tests if any goroutine a host started (or
// net/http started for it) is still running when they end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConformance runs the shared transport suite over ws://.
func TestConformance(t *testing.T) { transporttest.Run(t, Name) }

// TestConformanceTLS runs it over wss:// with a self-signed certificate
// on loopback that the clients are configured to trust (CAFile).
func TestConformanceTLS(t *testing.T) {
	cert, key, ca := writeCert(t)
	transporttest.RunWith(t, NameTLS, transporttest.Config{
		Server: transportOptions(cert, key, ""),
		Client: transportOptions("", "", ca),
	})
}

// writeCert writes a fresh self-signed loopback certificate and its key as
// PEM files; the certificate file doubles as the client's CAFile.
func writeCert(t testing.TB) (cert, key, ca string) {
	t.Helper()
	der, priv, err := SelfSigned(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert, key, cert
}
