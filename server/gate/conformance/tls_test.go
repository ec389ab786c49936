package conformance

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
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

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files in dir, the key
// in one of the encodings operators' files come in: "EC" (SEC 1), "PKCS8" (an EC key) or
// "RSA" (PKCS #1).
func selfSigned(t *testing.T, dir, encoding string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	var signer crypto.Signer
	var keyBlock *pem.Block
	switch encoding {
	case "RSA":
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		signer, keyBlock = key, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	default:
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		signer = key
		if encoding == "EC" {
			der, err := x509.MarshalECPrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			keyBlock = &pem.Block{Type: "EC PRIVATE KEY", Bytes: der}
		} else {
			der, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			keyBlock = &pem.Block{Type: "PRIVATE KEY", Bytes: der}
		}
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "ziggurat test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, signer.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(keyBlock), 0o600); err != nil {
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
	t.Parallel()
	for _, encoding := range []string{"EC", "PKCS8", "RSA"} {
		t.Run(encoding, func(t *testing.T) {
			t.Parallel()
			terminatesTLS(t, encoding)
		})
	}
}

func terminatesTLS(t *testing.T, encoding string) {
	up := startUpstream(t)
	certFile, keyFile, roots := selfSigned(t, t.TempDir(), encoding)
	_, address := startGate(t, up.target(), "--tls-cert", certFile, "--tls-key", keyFile)

	secure := dial(t, address, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots})))
	reply := new(frame)
	if err := secure.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("over tls"), reply); err != nil {
		t.Fatal(err)
	}
	if frameText(reply) != "over tls" {
		t.Fatalf("reply %q", frameText(reply))
	}
	if got, want := up.nextCall(t).md.Get(peerKey), []string{"ipv4:" + (*secure.local.Load()).String()}; !equal(got, want) {
		t.Fatalf("x-ziggurat-peer %q, want %q", got, want)
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

// --handshake-timeout covers the TLS handshake: a client that connects and says nothing,
// or starts TLS and stops, is closed after it.
func TestATLSHandshakeThatNeverEndsIsClosedAfterTheHandshakeTimeout(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	certFile, keyFile, _ := selfSigned(t, t.TempDir(), "EC")
	_, address := startGate(t, up.target(), "--tls-cert", certFile, "--tls-key", keyFile,
		"--handshake-timeout", "0.4", "--max-connection-idle", "0")
	for _, sent := range [][]byte{nil, {0x16, 0x03, 0x01, 0x02, 0x00}} { // nothing, or a ClientHello's first bytes
		conn, err := net.Dial("tcp", address)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := conn.Write(sent); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 1024)
		for err == nil {
			_, err = conn.Read(buf)
		}
		if isTimeout(err) {
			t.Fatalf("after %q the connection was still open after 10 s", sent)
		}
		if took := time.Since(start); took < 300*time.Millisecond || took > 3*time.Second {
			t.Fatalf("after %q the connection closed after %v, want about 0.4 s", sent, took)
		}
	}
}
