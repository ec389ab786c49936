package ziggurat_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
)

// selfSigned makes a certificate for 127.0.0.1 with openssl; returns the cert and key paths.
func selfSigned(t *testing.T) (string, string) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	out, err := exec.Command("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
		"-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
		"-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost").CombinedOutput()
	if err != nil {
		t.Skipf("openssl could not make a certificate: %v\n%s", err, out)
	}
	return cert, key
}

func TestPlaysOverTLS(t *testing.T) {
	cert, key := selfSigned(t)
	server := startServer(t, "--tls-cert", cert, "--tls-key", key)
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	ctx := testContext(t)

	// Without trusting the certificate the connection is refused (the TLS is real).
	untrusting, err := ziggurat.Dial(server.Address, ziggurat.WithTLS(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer untrusting.Close()
	if _, err := untrusting.CreateMatch(ctx, ziggurat.Pylos(), nil); err == nil {
		t.Fatal("a self-signed certificate was trusted without being given")
	}

	client, err := ziggurat.Dial(server.Address, ziggurat.WithTLS(&tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	matchID, results := playAll(t, ctx, client, ziggurat.Pylos())
	record, err := client.Record(ctx, matchID)
	if err != nil || len(record.GetMoves()) != len(results[0].History) || record.GetOutcome() == nil {
		t.Fatalf("record over TLS: %v %v", record, err)
	}
}
