package main

import (
	"strings"
	"testing"
	"time"
)

// wantOnlyTheGatesWord fails unless md carries exactly one x-ziggurat-peer (the client's real
// address) and one x-ziggurat-gate (the secret), and no other key of the gate's.
func wantOnlyTheGatesWord(t *testing.T, call seenCall) {
	t.Helper()
	for key, values := range call.md {
		switch {
		case key == peerKey:
			if len(values) != 1 || !strings.HasPrefix(values[0], "ipv4:127.0.0.1:") {
				t.Fatalf("x-ziggurat-peer %q reached the upstream, want only the client's own address", values)
			}
		case key == secretKey:
			if len(values) != 1 || values[0] != testSecret {
				t.Fatalf("x-ziggurat-gate %q reached the upstream, want only the gate's secret", values)
			}
		case strings.HasPrefix(key, "x-ziggurat"):
			t.Fatalf("%s: %q reached the upstream", key, values)
		}
	}
}

func TestForgedGateKeysInAnyFormNeverReachTheUpstream(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	c := dialRaw(t, address)
	// Repeated keys, the right secret guessed, binary variants: all dropped, the gate's added.
	c.headers(1, "/test.Echo/Echo", false,
		"x-ziggurat-peer", "ipv4:6.6.6.6:1", "x-ziggurat-peer", "ipv4:7.7.7.7:1",
		"x-ziggurat-gate", testSecret, "x-ziggurat-gate", "forged",
		"x-ziggurat-gate-bin", "AAEC", "x-ziggurat-peer-bin", "AAEC")
	c.message(1, "x", true)
	if end := c.end(1); end.grpcStatus != "0" {
		t.Fatalf("stream 1 ended %+v, want OK", end)
	}
	wantOnlyTheGatesWord(t, up.nextCall(t))

	// Upper case is not HTTP/2: the stream is reset, nothing is forwarded.
	c.headers(3, "/test.Echo/Echo", false, "X-Ziggurat-Peer", "ipv4:6.6.6.6:1", "X-ZIGGURAT-GATE", testSecret)
	c.message(3, "x", true)
	if end := c.end(3); !end.reset {
		t.Fatalf("stream 3 (upper-case keys) ended %+v, want it reset", end)
	}

	// Keys in the client's trailers: gRPC-Go closes a connection that sends request trailers;
	// whatever reached the upstream before carries only the gate's word.
	c = dialRaw(t, address)
	c.headers(1, "/test.Echo/Echo", false)
	c.message(1, "x", false)
	c.headers(1, "", true, "x-ziggurat-peer", "ipv4:8.8.8.8:1", "x-ziggurat-gate", testSecret)
	c.closed()
	for {
		select {
		case call := <-up.calls:
			wantOnlyTheGatesWord(t, call)
			continue
		case <-time.After(200 * time.Millisecond):
		}
		break
	}
	if n := up.count.Load(); n > 2 {
		t.Fatalf("the upstream saw %d calls, want at most the two well-formed ones", n)
	}
}
