package conformance

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// --max-open-connections-per-address counts every connection from accept, before its TLS and
// HTTP/2 set-up and whether or not it makes a call: one client address cannot take the
// gate's file descriptors from every other client by holding connections that say nothing.
// A connection over it is closed at once, with nothing sent (a GOAWAY would have gRPC core's
// clients reconnect in a loop and hold their calls until their deadlines).

// dialFrom opens a TCP connection to address from the local IP from ("" for any).
func dialFrom(t *testing.T, address, from string) net.Conn {
	t.Helper()
	dialer := net.Dialer{Timeout: 5 * time.Second}
	if from != "" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	conn, err := dialer.Dial("tcp", address)
	if err != nil {
		t.Fatalf("dial %s from %q: %v", address, from, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// idleFrom opens a connection from the local IP from that sends nothing at all, and waits
// for the gate's first SETTINGS frame on it: the gate has accepted it and holds it.
func idleFrom(t *testing.T, address, from string) net.Conn {
	t.Helper()
	conn := dialFrom(t, address, from)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	frame, err := http2.NewFramer(nil, conn).ReadFrame()
	if err != nil {
		t.Fatalf("an idle connection from %q: %v, want the gate's SETTINGS", from, err)
	}
	if settings, ok := frame.(*http2.SettingsFrame); !ok || settings.IsAck() {
		t.Fatalf("an idle connection from %q: the gate's first frame is %v, want its SETTINGS", from, frame)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return conn
}

// refusedAtOnce checks that conn is closed within 2 s, before the gate sends anything (not
// even its HTTP/2 SETTINGS: no TLS or HTTP/2 set-up was started).
func refusedAtOnce(t *testing.T, conn net.Conn) {
	t.Helper()
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := conn.Read(make([]byte, 1024))
	if isTimeout(err) {
		t.Fatal("a connection over the cap was still open after 10 s")
	}
	if n != 0 || (!errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("a connection over the cap read %d bytes, %v; want it closed with nothing sent", n, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a connection over the cap was closed after %v, want at once", took)
	}
}

// callFrom makes one call from the local IP from ("" for any) on a channel of its own.
func callFrom(t *testing.T, address, from string) error {
	t.Helper()
	dialer := net.Dialer{}
	if from != "" {
		dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	conn := dial(t, address, grpc.WithContextDialer(func(ctx context.Context, target string) (net.Conn, error) {
		return dialer.DialContext(ctx, "tcp", target)
	}))
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame))
}

func TestOpenConnectionsPerAddressAreCappedFromAcceptAndFreedWhenTheyClose(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	// Neither the handshake timeout nor the idle timeout closes anything during the test.
	p, address := startGate(t, up.target(), "--max-open-connections-per-address", "3",
		"--handshake-timeout", "60", "--max-connection-idle", "0")
	// 127.0.0.1 holds 3 connections: one that never said anything, one with HTTP/2 set up
	// and no call, and one with a call open.
	silent := idleFrom(t, address, "127.0.0.1")
	idleFrom(t, address, "127.0.0.1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	busy := dial(t, address)
	openForwarded(t, ctx, busy, up)

	for range 5 {
		refusedAtOnce(t, dialFrom(t, address, "127.0.0.1"))
	}
	if err := callFrom(t, address, "127.0.0.1"); status.Code(err) != codes.Unavailable {
		t.Fatalf("a call on a new connection from 127.0.0.1, over its cap: %v, want UNAVAILABLE", err)
	}
	// The connection in use still carries calls; another address gets in, and has 3 of its own.
	if err := busy.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("a call on a connection counted within the cap: %v", err)
	}
	for range 2 {
		idleFrom(t, address, "127.0.0.2")
	}
	if err := callFrom(t, address, "127.0.0.2"); err != nil {
		t.Fatalf("a call from 127.0.0.2 beside 127.0.0.1's full cap: %v", err)
	}

	// Closing a connection frees its place.
	_ = silent.Close()
	eventually(t, "a closed connection to free its place", func() bool { return callFrom(t, address, "127.0.0.1") == nil })

	// Refusals are logged once per 10 s, with the address, not one line each.
	lines := linesSaying(t, p.stderrLines(), "TOO_MANY_OPEN_CONNECTIONS")
	want := "refused a connection from ipv4:127.0.0.1: TOO_MANY_OPEN_CONNECTIONS: this address has 3 connections open, the most the server allows (3); close some first"
	if len(lines) != 1 || !strings.Contains(lines[0], " WARNING ") || !strings.HasSuffix(lines[0], want) {
		t.Fatalf("log lines about the refused connections %q, want one WARNING ending %q", lines, want)
	}
}

func TestTheDefaultOpenConnectionsCapIs1000PerAddress(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	for range 1000 {
		idleFrom(t, address, "127.0.0.1")
	}
	refusedAtOnce(t, dialFrom(t, address, "127.0.0.1"))
	if err := callFrom(t, address, "127.0.0.2"); err != nil {
		t.Fatalf("a call from 127.0.0.2 beside 1000 idle connections from 127.0.0.1: %v", err)
	}

	_, address = startGate(t, up.target(), "--max-open-connections-per-address", "0") // no cap
	for range 1100 {
		idleFrom(t, address, "127.0.0.1")
	}
	if err := callFrom(t, address, "127.0.0.1"); err != nil {
		t.Fatalf("a call beside 1100 idle connections with no cap: %v", err)
	}
}

// On a dual-stack port an IPv4 client arrives as ::ffff:a.b.c.d: it is still counted by its
// IPv4 address (as a /64 it would share ::/64 with every IPv4 client, and with ::1).
func TestIPv4ClientsOfADualStackPortAreCountedByTheirOwnAddress(t *testing.T) {
	t.Parallel()
	probe, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	_ = probe.Close()
	up := startUpstream(t)
	p := startProcess(t, secretEnv(), "--listen", "[::]:0", "--upstream", up.target(),
		"--max-open-connections-per-address", "1")
	_, port, _ := net.SplitHostPort(p.ready(t, ""))
	v4, v6 := net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)
	idleFrom(t, v4, "127.0.0.1")
	idleFrom(t, v4, "127.0.0.2")
	idleFrom(t, v6, "::1")
	refusedAtOnce(t, dialFrom(t, v4, "127.0.0.1"))
	refusedAtOnce(t, dialFrom(t, v4, "127.0.0.2"))
	refusedAtOnce(t, dialFrom(t, v6, "::1"))
}

// With TLS too a connection over the cap is closed before any handshake: the handshake is
// the cost the cap saves.
func TestWithTLSAConnectionOverTheCapIsClosedBeforeAnyHandshake(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	certFile, keyFile, roots := selfSigned(t, t.TempDir(), "EC")
	_, address := startGate(t, up.target(), "--tls-cert", certFile, "--tls-key", keyFile,
		"--max-open-connections-per-address", "1", "--handshake-timeout", "60")
	dialFrom(t, address, "127.0.0.1")  // says nothing: counted from accept all the same
	time.Sleep(200 * time.Millisecond) // the gate has accepted it
	refusedAtOnce(t, dialFrom(t, address, "127.0.0.1"))
	secure := grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: roots}))
	dialer := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	other := dial(t, address, secure, grpc.WithContextDialer(func(ctx context.Context, target string) (net.Conn, error) {
		return dialer.DialContext(ctx, "tcp", target)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := other.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("a TLS call from 127.0.0.2: %v", err)
	}
}
