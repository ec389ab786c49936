package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestForwardsAUnaryCallWithHeadersAndTrailers(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	conn := dial(t, address)
	for _, text := range []string{"hello", ""} { // an empty message is a message too
		var header, trailer metadata.MD
		reply := new(frame)
		err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(text), reply,
			grpc.Header(&header), grpc.Trailer(&trailer))
		if err != nil {
			t.Fatal(err)
		}
		if got := frameText(reply); got != text {
			t.Fatalf("reply %q, want %q", got, text)
		}
		if header.Get("x-up-header")[0] != "h" || trailer.Get("x-up-trailer")[0] != "t" {
			t.Fatalf("header %v trailer %v: the upstream's were not forwarded", header, trailer)
		}
		if call := up.nextCall(t); call.method != "/test.Echo/Echo" {
			t.Fatalf("upstream saw %s", call.method)
		}
	}
}

func TestACompressedCallIsForwarded(t *testing.T) {
	up := startUpstream(t)
	// The built binary: in this test process gzip is registered by the test's own import.
	p := startProcess(t, secretEnv(), "--listen", "127.0.0.1:0", "--upstream", up.target(), "--max-message-bytes", "1000")
	conn := dial(t, p.ready(t))
	big := strings.Repeat("a", 5000) // compresses to well under the limit, but the limit is on what it unpacks to
	err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(big), new(frame), grpc.UseCompressor(gzip.Name))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a gzipped message over --max-message-bytes: %v", err)
	}
	reply := new(frame)
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("squeeze me"), reply, grpc.UseCompressor(gzip.Name)); err != nil {
		t.Fatal(err)
	}
	if frameText(reply) != "squeeze me" {
		t.Fatalf("reply %q", frameText(reply))
	}
}

func TestForwardsABidiStreamBothWaysAtOnce(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	stream := open(t, context.Background(), dial(t, address), "/test.Echo/Echo")
	// Ping-pong: each reply must come back before the next message is sent, so the gate
	// cannot be waiting for the end of the requests before it forwards responses.
	for i := range 5 {
		text := fmt.Sprintf("move %d", i)
		if err := stream.SendMsg(bytesFrame(text)); err != nil {
			t.Fatal(err)
		}
		reply := new(frame)
		if err := stream.RecvMsg(reply); err != nil {
			t.Fatal(err)
		}
		if frameText(reply) != text {
			t.Fatalf("reply %q, want %q", frameText(reply), text)
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := recvErr(t, stream); err != io.EOF {
		t.Fatalf("stream ended with %v, want OK", err)
	}
	if stream.Trailer().Get("x-up-trailer")[0] != "t" {
		t.Fatalf("trailer %v", stream.Trailer())
	}
}

func TestMetadataIsForwardedWithTheRealPeerAndTheSecretAndNoForgery(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	conn := dial(t, address)
	ctx := metadata.AppendToOutgoingContext(context.Background(),
		"x-ziggurat-peer", "ipv4:6.6.6.6:666",
		"x-ziggurat-gate", "forged-secret",
		"x-ziggurat-gate-anything", "forged",
		"authorization", "Bearer seat-token",
		"x-trace-bin", string([]byte{0, 1, 2}),
	)
	if err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	call := up.nextCall(t)
	local := *conn.local.Load()
	if got, want := call.md.Get("x-ziggurat-peer"), []string{"ipv4:" + local.String()}; !equal(got, want) {
		t.Fatalf("x-ziggurat-peer %q, want %q (the client's own address)", got, want)
	}
	if got := call.md.Get("x-ziggurat-gate"); !equal(got, []string{testSecret}) {
		t.Fatalf("x-ziggurat-gate %q, want only the gate's secret", got)
	}
	for key := range call.md {
		if strings.HasPrefix(key, "x-ziggurat-gate") && key != "x-ziggurat-gate" {
			t.Fatalf("forged key %s reached the upstream", key)
		}
	}
	if !equal(call.md.Get("authorization"), []string{"Bearer seat-token"}) ||
		!equal(call.md.Get("x-trace-bin"), []string{string([]byte{0, 1, 2})}) {
		t.Fatalf("the client's own metadata was not forwarded: %v", call.md)
	}
}

func TestPeerNameHasGRPCsForm(t *testing.T) {
	for _, c := range []struct{ address, peer, key string }{
		{"127.0.0.1:5678", "ipv4:127.0.0.1:5678", "ipv4:127.0.0.1"},
		{"[::ffff:10.1.2.3]:80", "ipv4:10.1.2.3:80", "ipv4:10.1.2.3"},
		{"[::1]:5678", "ipv6:[::1]:5678", "ipv6:[::1]"},
		{"[fe80::1%eth0]:9", "ipv6:[fe80::1%eth0]:9", "ipv6:[fe80::1%eth0]"},
	} {
		addr, err := resolveTCP(c.address)
		if err != nil {
			t.Fatal(err)
		}
		if got := peerName(addr); got != c.peer || addressOf(got) != c.key {
			t.Errorf("%s: peer %q address %q, want %q %q", c.address, got, addressOf(got), c.peer, c.key)
		}
	}
}

func TestTheUpstreamsStatusDetailsAndTrailersReachTheClientUnchanged(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	var trailer metadata.MD
	err := dial(t, address).Invoke(context.Background(), "/test.Echo/Fail", bytesFrame("move"), new(frame),
		grpc.Trailer(&trailer))
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition || st.Message() != "it is not your turn" {
		t.Fatalf("got %v", err)
	}
	if len(st.Details()) != 1 {
		t.Fatalf("details %v", st.Details())
	}
	info, ok := st.Details()[0].(*errdetails.ErrorInfo)
	if !ok || info.Reason != "NOT_YOUR_TURN" || info.Domain != "ziggurat" || info.Metadata["seat"] != "2" {
		t.Fatalf("detail %v", st.Details()[0])
	}
	if !equal(trailer.Get("x-up-trailer"), []string{"t"}) {
		t.Fatalf("trailer %v", trailer)
	}
	// The same while the client is still sending: the upstream's status ends the call.
	stream := open(t, context.Background(), dial(t, address), "/test.Echo/Fail")
	if err := stream.SendMsg(bytesFrame("move")); err != nil {
		t.Fatal(err)
	}
	if st := status.Convert(recvErr(t, stream)); st.Code() != codes.FailedPrecondition || len(st.Details()) != 1 {
		t.Fatalf("got %v %v", st.Code(), st.Details())
	}
}

func TestAClientCancelReachesTheUpstream(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	stream := open(t, ctx, dial(t, address), "/test.Echo/Hang")
	if err := stream.SendMsg(bytesFrame("watch")); err != nil {
		t.Fatal(err)
	}
	up.nextCall(t)
	if _, err := stream.Header(); err != nil { // the upstream's headers came through
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-up.ended:
		if err != context.Canceled {
			t.Fatalf("the upstream's call ended with %v, want it cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client's cancel did not reach the upstream")
	}
}

func TestTheClientsDeadlineReachesTheUpstream(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	conn := dial(t, address)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	want, _ := ctx.Deadline()
	call := up.nextCall(t)
	if call.deadline.IsZero() || call.deadline.Sub(want).Abs() > 2*time.Second {
		t.Fatalf("the upstream's deadline %v, want about %v", call.deadline, want)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	err := conn.Invoke(short, "/test.Echo/Hang", bytesFrame("x"), new(frame))
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("got %v, want DEADLINE_EXCEEDED", err)
	}
	if call := up.nextCall(t); call.deadline.IsZero() {
		t.Fatal("the upstream's call had no deadline")
	}
	select {
	case err := <-up.ended:
		// Its own timer, or the cancel the client's deadline sends through the gate: a race.
		if err != context.DeadlineExceeded && err != context.Canceled {
			t.Fatalf("the upstream's call ended with %v, want it ended by the deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream's call did not end at the deadline")
	}
}

func TestAHalfCloseBeforeAnyMessageIsForwarded(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), func(c *config) { c.firstMessageTimeout = 200 * time.Millisecond })
	stream := open(t, context.Background(), dial(t, address), "/test.Echo/Echo")
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := recvErr(t, stream); err != io.EOF { // the upstream, not the gate, decided: OK
		t.Fatalf("got %v, want the upstream's OK", err)
	}
	if !equal(stream.Trailer().Get("x-up-trailer"), []string{"t"}) {
		t.Fatalf("trailer %v: the upstream did not answer", stream.Trailer())
	}
}

func TestAnUnreachableUpstreamIsUnavailableAndItsPathStaysPrivate(t *testing.T) {
	_, address := startGate(t, "unix:"+t.TempDir()+"/nobody.sock", nil)
	err := dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame))
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || len(st.Details()) != 0 || st.Message() != "the server cannot be reached; retry later" {
		t.Fatalf("got %v %v, want UNAVAILABLE without a reason or the socket's path", err, st.Details())
	}
}

func TestAMessageOverTheLimitIsRefusedBeforeTheUpstream(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), func(c *config) { c.maxMessageBytes = 100 })
	conn := dial(t, address)
	err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(strings.Repeat("x", 200)), new(frame))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("got %v, want RESOURCE_EXHAUSTED", err)
	}
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("small"), new(frame)); err != nil {
		t.Fatal(err)
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want only the small one", n)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
