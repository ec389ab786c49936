package conformance

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestMetadataIsForwardedWithTheRealPeerAndTheSecretAndNoForgery(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	conn := dial(t, address)
	ctx := metadata.AppendToOutgoingContext(context.Background(),
		"x-ziggurat-peer", "ipv4:6.6.6.6:666",
		"x-ziggurat-gate", "forged-secret",
		"x-ziggurat-gate-anything", "forged",
		"x-ziggurat-peerless", "forged",
		"authorization", "Bearer seat-token",
		"x-trace-bin", string([]byte{0, 1, 2}),
		"x-ziggurat-other", "the client's own",
		"x-repeated", "first", "x-repeated", "second",
	)
	if err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	call := up.nextCall(t)
	local := *conn.local.Load()
	if got, want := call.md.Get(peerKey), []string{"ipv4:" + local.String()}; !equal(got, want) {
		t.Fatalf("x-ziggurat-peer %q, want %q (the client's own address)", got, want)
	}
	if got := call.md.Get(secretKey); !equal(got, []string{testSecret}) {
		t.Fatalf("x-ziggurat-gate %q, want only the gate's secret", got)
	}
	for key := range call.md {
		if (strings.HasPrefix(key, secretKey) && key != secretKey) || (strings.HasPrefix(key, peerKey) && key != peerKey) {
			t.Fatalf("forged key %s reached the upstream", key)
		}
	}
	if !equal(call.md.Get("authorization"), []string{"Bearer seat-token"}) ||
		!equal(call.md.Get("x-trace-bin"), []string{string([]byte{0, 1, 2})}) ||
		!equal(call.md.Get("x-ziggurat-other"), []string{"the client's own"}) ||
		!equal(call.md.Get("x-repeated"), []string{"first", "second"}) {
		t.Fatalf("the client's own metadata was not forwarded: %v", call.md)
	}
}

// The peer has gRPC's form, which the Python server's guard splits: ipv4:1.2.3.4:5678 (an
// IPv4 client on a dual-stack socket too), ipv6:[::1]:5678.
func TestThePeerHasGRPCsFormForIPv4AndIPv6(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	for _, c := range []struct{ listen, host, dial, form string }{
		{"[::1]:0", "[::1]", "[::1]", "ipv6:"},
		{"[::]:0", "[::]", "127.0.0.1", "ipv4:"},
		{"0.0.0.0:0", "", "127.0.0.1", "ipv4:"}, // the Go gate says [::] (Go listens on both)
		{"localhost:0", "", "127.0.0.1", "ipv4:"},
	} {
		p := startProcess(t, secretEnv(), "--listen", c.listen, "--upstream", up.target())
		address := p.ready(t, c.host)
		port := address[strings.LastIndex(address, ":")+1:]
		conn := dial(t, c.dial+":"+port)
		if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
			t.Fatal(err)
		}
		local := *conn.local.Load()
		if got, want := up.nextCall(t).md.Get(peerKey), []string{c.form + local.String()}; !equal(got, want) {
			t.Fatalf("listening on %s, a client from %s: x-ziggurat-peer %q, want %q", c.listen, local, got, want)
		}
	}
}

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
		case strings.HasPrefix(key, peerKey) || strings.HasPrefix(key, secretKey):
			t.Fatalf("%s: %q reached the upstream", key, values)
		}
	}
}

func TestForgedGateKeysInAnyFormNeverReachTheUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
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

	// Upper case is not HTTP/2: a malformed request, nothing is forwarded. The stream is
	// reset (RFC 9113, 8.1.1), or the connection closed with PROTOCOL_ERROR.
	c.headers(3, "/test.Echo/Echo", false, "X-Ziggurat-Peer", "ipv4:6.6.6.6:1", "X-ZIGGURAT-GATE", testSecret)
	_ = c.framer.WriteData(3, true, []byte{0, 0, 0, 0, 1, 'x'})
	if end := c.end(3); !end.reset && !(end.goAway && end.code == http2.ErrCodeProtocol) {
		t.Fatalf("stream 3 (upper-case keys) ended %+v, want it reset or its connection closed", end)
	}

	// Keys in the client's trailers: no gRPC client sends request trailers (gRPC-Go closes
	// a connection that does); whatever reached the upstream carries only the gate's word.
	c = dialRaw(t, address)
	c.headers(1, "/test.Echo/Echo", false)
	c.message(1, "x", false)
	c.headers(1, "", true, "x-ziggurat-peer", "ipv4:8.8.8.8:1", "x-ziggurat-gate", testSecret)
	c.closed(2 * time.Second)
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

func TestMetadataOverPythonsHardLimitIsRefusedAtOnceAndNeverReachesTheUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-streams-per-address", "1")
	conn := dial(t, address)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-big", strings.Repeat("b", 20<<10))
	stream := open(t, ctx, conn, "/test.Echo/Echo") // sends no message: would be held
	st := status.Convert(recvErr(t, stream))
	if st.Code() != codes.ResourceExhausted ||
		!strings.HasPrefix(st.Message(), "received metadata size exceeds hard limit (") ||
		!strings.HasSuffix(st.Message(), " vs. 16384)") {
		t.Fatalf("got %v %q, want gRPC core's RESOURCE_EXHAUSTED", st.Code(), st.Message())
	}
	// Up to the limit the upstream decides (the Python server refuses over 8 KiB itself);
	// the refused call was not held (the address may have one call).
	ctx = metadata.AppendToOutgoingContext(context.Background(), "x-big", strings.Repeat("b", 12<<10))
	if err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	if got := up.nextCall(t).md.Get("x-big"); len(got) != 1 || len(got[0]) != 12<<10 {
		t.Fatalf("the upstream saw x-big of %d bytes", len(got))
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want only the one within the limit", n)
	}
	// Before the address's cap: with its one call open, the metadata is what is refused.
	openForwarded(t, context.Background(), conn, up)
	ctx = metadata.AppendToOutgoingContext(context.Background(), "x-big", strings.Repeat("b", 20<<10))
	err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame))
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted ||
		!strings.HasPrefix(st.Message(), "received metadata size exceeds hard limit (") {
		t.Fatalf("with the address's cap reached: %v, want the metadata refused first", err)
	}
}

// user-agent is metadata too (gRPC counts it, and the Python server would refuse it over
// the limit): a call that sent 20 KiB of it is refused at once, not held with it.
func TestAUserAgentOverPythonsHardLimitIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	conn := dial(t, address, grpc.WithUserAgent(strings.Repeat("u", 20<<10)))
	stream := open(t, context.Background(), conn, "/test.Echo/Echo") // sends no message: would be held
	refusedAsTooMuchMetadata(t, up, stream)
}

// The path counts as well (gRPC core, the Python server, counts every field of the header
// block): a call whose path takes it over the limit is refused at once, not held with it.
func TestAPathOverPythonsHardLimitIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	stream := open(t, context.Background(), dial(t, address), "/test.Echo/"+strings.Repeat("p", 20<<10))
	refusedAsTooMuchMetadata(t, up, stream)
}

// refusedAsTooMuchMetadata checks that stream ended as gRPC core ends a call over the Python
// server's hard metadata limit, and that none reached the upstream.
func refusedAsTooMuchMetadata(t *testing.T, up *fakeUpstream, stream grpc.ClientStream) {
	t.Helper()
	st := status.Convert(recvErr(t, stream))
	if st.Code() != codes.ResourceExhausted ||
		!strings.HasPrefix(st.Message(), "received metadata size exceeds hard limit (") {
		t.Fatalf("got %v %q, want gRPC core's RESOURCE_EXHAUSTED", st.Code(), st.Message())
	}
	if n := up.count.Load(); n != 0 {
		t.Fatalf("the upstream saw %d calls, want none", n)
	}
}

func TestAHeaderBlockOverTheTransportCapClosesTheConnectionUnread(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	var fields []string // many small fields, or one large one
	for i := range 80 {
		fields = append(fields, fmt.Sprintf("x-field-%d", i), strings.Repeat("b", 1000))
	}
	for _, block := range [][]string{fields, {"x-huge", strings.Repeat("h", 1<<20)}} {
		c := dialRaw(t, address)
		// Closed while it is written, or after.
		if err := c.tryHeaders(1, "/test.Echo/Echo", false, block...); err == nil && !c.closed(10*time.Second) {
			t.Fatal("the connection lives on after a header block over the cap")
		}
	}
	// The gate itself is fine: a new connection's call goes through.
	c := dialRaw(t, address)
	c.headers(1, "/test.Echo/Echo", false, "x-small", "s")
	c.message(1, "x", true)
	if end := c.end(1); end.grpcStatus != "0" {
		t.Fatalf("a call on a new connection ended %+v, want OK", end)
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want only the small one", n)
	}
}

// A header block small on the wire can decode to much more (HPACK's dynamic table: one 3 KB
// field, then 200 one-byte references to it). The limits are on the decoded size: nothing is
// forwarded, and the gate goes on serving others.
func TestAnHPACKBombIsRefusedUnforwarded(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	c := dialRaw(t, address)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/test.Echo/Echo"},
		{":authority", "gate"}, {"content-type", "application/grpc"}, {"te", "trailers"},
		{"x-bomb", strings.Repeat("b", 3000)}} { // the last goes into the dynamic table, at index 62
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	wire := append(block.Bytes(), bytes.Repeat([]byte{0x80 | 62}, 200)...) // 600 KB decoded
	if err := c.framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: wire, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	_ = c.framer.WriteData(1, true, []byte{0, 0, 0, 0, 1, 'x'})
	if end := c.end(1); !end.reset && !end.goAway && end.grpcStatus != strconv.Itoa(int(codes.ResourceExhausted)) {
		t.Fatalf("the stream ended %+v, want it refused", end)
	}
	if err := dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("another client's call: %v", err)
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want only the other client's", n)
	}
}
