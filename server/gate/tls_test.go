package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files in dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "ziggurat test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	certificate, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(certificate)
	return certFile, keyFile, roots
}

func TestTheGateTerminatesTLS(t *testing.T) {
	up := startUpstream(t)
	certFile, keyFile, roots := selfSigned(t, t.TempDir())
	_, address := startGate(t, up.target(), func(c *config) { c.tlsCert, c.tlsKey = certFile, keyFile })

	secure := dial(t, address, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots})))
	reply := new(frame)
	if err := secure.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("over tls"), reply); err != nil {
		t.Fatal(err)
	}
	if frameText(reply) != "over tls" {
		t.Fatalf("reply %q", frameText(reply))
	}
	if call := up.nextCall(t); call.md.Get("x-ziggurat-peer")[0] != "ipv4:"+(*secure.local.Load()).String() {
		t.Fatalf("peer %v", call.md.Get("x-ziggurat-peer"))
	}

	plain := dial(t, address) // a client that does not speak TLS gets nowhere
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := plain.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame))
	if code := status.Code(err); code != codes.Unavailable && code != codes.DeadlineExceeded {
		t.Fatalf("a plaintext call got %v", err)
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want the TLS one only", n)
	}
}
