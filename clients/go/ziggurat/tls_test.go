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

// lanCA runs `ziggurat tls init`: a private CA (ca.pem) and a server certificate it signs for
// ziggurat.lan and 127.0.0.1 (server.pem, server.key), as an operator makes them for a LAN.
func lanCA(t *testing.T) (ca, cert, key string) {
	dir := t.TempDir()
	out, err := exec.Command(zigguratCommand(t), "tls", "init", "--dir", dir, "--host", "ziggurat.lan").CombinedOutput()
	if err != nil {
		t.Fatalf("ziggurat tls init: %v\n%s", err, out)
	}
	return filepath.Join(dir, "ca.pem"), filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
}

func TestPlaysOverTLS(t *testing.T) {
	ca, cert, key := lanCA(t)
	server := startServer(t, "--tls-cert", cert, "--tls-key", key)
	pem, err := os.ReadFile(ca)
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
		t.Fatal("a private CA's certificate was trusted without the CA being given")
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

	// The certificate names the --host given too: verified as ziggurat.lan, it is accepted.
	byName, err := ziggurat.Dial(server.Address, ziggurat.WithTLS(&tls.Config{RootCAs: roots, ServerName: "ziggurat.lan", MinVersion: tls.VersionTLS12}))
	if err != nil {
		t.Fatal(err)
	}
	defer byName.Close()
	if _, err := byName.Record(ctx, matchID); err != nil {
		t.Fatalf("as ziggurat.lan: %v", err)
	}
}
