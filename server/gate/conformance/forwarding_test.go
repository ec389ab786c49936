package conformance

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestForwardsAUnaryCallOfAnyMethodWithHeadersAndTrailers(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
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
		if !equal(header.Get("x-up-header"), []string{"h"}) || !equal(trailer.Get("x-up-trailer"), []string{"t"}) {
			t.Fatalf("header %v trailer %v: the upstream's were not forwarded", header, trailer)
		}
		if call := up.nextCall(t); call.method != "/test.Echo/Echo" {
			t.Fatalf("upstream saw %s", call.method)
		}
	}
	// A method no one has heard of is forwarded too: the upstream answers it.
	err := conn.Invoke(context.Background(), "/some.Other/Thing", bytesFrame("x"), new(frame))
	if st := status.Convert(err); st.Code() != codes.Unimplemented || st.Message() != "no method /some.Other/Thing" {
		t.Fatalf("got %v, want the upstream's UNIMPLEMENTED", err)
	}
}

func TestACompressedCallIsForwardedAndItsLimitIsOnTheUnpackedSize(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-message-bytes", "1000")
	conn := dial(t, address)
	big := strings.Repeat("a", 5000) // compresses to well under the limit, but the limit is on what it unpacks to
	err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(big), new(frame), grpc.UseCompressor(gzip.Name))
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a gzipped message over --max-message-bytes: %v, want RESOURCE_EXHAUSTED", err)
	}
	reply := new(frame)
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("squeeze me"), reply, grpc.UseCompressor(gzip.Name)); err != nil {
		t.Fatal(err)
	}
	if frameText(reply) != "squeeze me" {
		t.Fatalf("reply %q", frameText(reply))
	}
}

// A gzip message may be several gzip members one after another (gRPC-Go's reader, and
// gzip itself, read them all): the limit is on all of them unpacked, not the first.
func TestEveryGzipMemberOfAMessageCountsTowardsItsUnpackedSize(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-message-bytes", "1000")
	members := func(n, size int) []byte {
		var packed bytes.Buffer
		for range n {
			w := stdgzip.NewWriter(&packed)
			_, _ = w.Write(bytes.Repeat([]byte("a"), size))
			_ = w.Close()
		}
		return packed.Bytes()
	}
	for _, tc := range []struct {
		members, size int
		want          string
	}{{2, 800, "8"}, {3, 600, "8"}, {2, 400, "0"}} {
		c := dialRaw(t, address)
		c.headers(1, "/test.Echo/Echo", false, "grpc-encoding", "gzip")
		packed := members(tc.members, tc.size)
		n := len(packed)
		data := append([]byte{1, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, packed...)
		if err := c.framer.WriteData(1, true, data); err != nil {
			t.Fatal(err)
		}
		if end := c.end(1); end.grpcStatus != tc.want {
			t.Fatalf("%d gzip members of %d bytes each, --max-message-bytes 1000: ended %+v, want grpc-status %s",
				tc.members, tc.size, end, tc.want)
		}
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want only the one within the limit", n)
	}
}

func TestForwardsABidiStreamBothWaysAtOnce(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
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
	if !equal(stream.Trailer().Get("x-up-trailer"), []string{"t"}) {
		t.Fatalf("trailer %v", stream.Trailer())
	}
}

// Whatever the gate does with the bytes it carries (zero-copy buffers, pools), a message
// must arrive whole and in order, never with another's bytes.
func TestManyMessagesBothWaysArriveWholeAndInOrder(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	conn := dial(t, address)
	const streams, each = 8, 300
	errs := make(chan error, streams)
	for s := range streams {
		go func() {
			errs <- func() error {
				stream, err := conn.NewStream(context.Background(), anyMethod, "/test.Echo/Echo")
				if err != nil {
					return err
				}
				random := rand.New(rand.NewPCG(uint64(s), 1))
				sent := make(chan []byte, each)
				go func() {
					for i := range each {
						size := []int{0, 1, 100, 4000, 16 << 10, 60 << 10}[random.IntN(6)]
						payload := make([]byte, size)
						for j := range payload {
							payload[j] = byte(random.Uint32())
						}
						if size > 0 {
							payload[0] = byte(i) // no two neighbours alike
						}
						sent <- payload
						if stream.SendMsg(&frame{data: payload}) != nil {
							return
						}
					}
					_ = stream.CloseSend()
				}()
				for i := range each {
					got := new(frame)
					if err := stream.RecvMsg(got); err != nil {
						return err
					}
					if want := <-sent; !bytes.Equal(got.data, want) {
						return fmt.Errorf("stream %d message %d: %d bytes came back, not the %d sent", s, i, len(got.data), len(want))
					}
				}
				if err := stream.RecvMsg(new(frame)); err != io.EOF {
					return fmt.Errorf("stream %d ended with %v, want OK", s, err)
				}
				return nil
			}()
		}()
	}
	for range streams {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestTheUpstreamsStatusDetailsAndTrailersReachTheClientUnchanged(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
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

// awkwardStatus has what a status can carry that a proxy could mangle: a message with
// percent signs, new lines and non-ASCII text, several details, one of a type the gate has
// never heard of.
func awkwardStatus(t *testing.T) *spb.Status {
	t.Helper()
	info, err := anypb.New(&errdetails.ErrorInfo{Reason: "NOT_YOUR_TURN", Domain: "ziggurat",
		Metadata: map[string]string{"seat": "2", "note": "ü %41"}})
	if err != nil {
		t.Fatal(err)
	}
	retry, err := anypb.New(&errdetails.RetryInfo{RetryDelay: durationpb.New(1500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/ziggurat.future.Thing", Value: []byte{0x0a, 0x03, 0xff, 0x00, 0x01}}
	return &spb.Status{
		Code:    int32(codes.FailedPrecondition),
		Message: "100% not yours: ü\nsecond line\t%2F \x7f",
		Details: []*anypb.Any{info, retry, unknown},
	}
}

func TestStatusHeadersAndTrailersComeThroughByteForByte(t *testing.T) {
	t.Parallel()
	want := awkwardStatus(t)
	header := metadata.MD{"x-h": {"one", "two"}, "x-h-bin": {"\x00\xff\x01"}}
	trailer := metadata.MD{"x-t": {"ü"}, "x-t-bin": {"\xff\x00"}}
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		if err := stream.RecvMsg(new(frame)); err != nil {
			return err
		}
		if err := stream.SendHeader(header); err != nil {
			return err
		}
		if err := stream.SendMsg(bytesFrame("a message before the status")); err != nil {
			return err
		}
		stream.SetTrailer(trailer)
		return status.FromProto(want).Err()
	})
	_, address := startGate(t, target)
	stream := open(t, context.Background(), dial(t, address), "/test.Status/Awkward")
	if err := stream.SendMsg(bytesFrame("x")); err != nil {
		t.Fatal(err)
	}
	if err := stream.RecvMsg(new(frame)); err != nil {
		t.Fatal(err)
	}
	got := status.Convert(recvErr(t, stream)).Proto()
	if !proto.Equal(got, want) {
		t.Fatalf("status\n%v\nwant\n%v", got, want)
	}
	gotHeader, _ := stream.Header()
	for key, values := range header {
		if !equal(gotHeader.Get(key), values) {
			t.Fatalf("header %s: %q, want %q", key, gotHeader.Get(key), values)
		}
	}
	for key, values := range trailer {
		if !equal(stream.Trailer().Get(key), values) {
			t.Fatalf("trailer %s: %q, want %q", key, stream.Trailer().Get(key), values)
		}
	}
}

func TestAClientCancelReachesTheUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	ctx, cancel := context.WithCancel(context.Background())
	openForwarded(t, ctx, dial(t, address), up) // the upstream's headers came through
	cancel()
	up.wantCancelled(t, "the client cancelled")
}

func TestTheClientsDeadlineReachesTheUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
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
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--first-message-timeout", "0.2")
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
	// The same with END_STREAM on the HEADERS frame itself (no DATA frame at all).
	c := dialRaw(t, address)
	c.headers(1, "/test.Echo/Echo", true)
	if end := c.end(1); end.grpcStatus != "0" {
		t.Fatalf("a call of headers only ended %+v, want the upstream's OK", end)
	}
	if n := up.count.Load(); n != 2 {
		t.Fatalf("the upstream saw %d calls, want both", n)
	}
}

func TestAnUnreachableUpstreamIsUnavailableAndItsPathStaysPrivate(t *testing.T) {
	t.Parallel()
	socket := t.TempDir() + "/nobody.sock"
	_, address := startGate(t, "unix:"+socket)
	err := dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame))
	st := status.Convert(err)
	if st.Code() != codes.Unavailable || len(st.Details()) != 0 || strings.Contains(st.Message(), "nobody") ||
		strings.Contains(st.Message(), "sock") {
		t.Fatalf("got %v %v, want a plain UNAVAILABLE without a reason or the socket's path", err, st.Details())
	}
}

func TestAMessageOverTheLimitIsRefusedBeforeTheUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-message-bytes", "100")
	conn := dial(t, address)
	err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(strings.Repeat("x", 101)), new(frame))
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "larger than max (101 vs. 100)") {
		t.Fatalf("got %v, want gRPC's RESOURCE_EXHAUSTED for a message over the limit", err)
	}
	for _, size := range []int{100, 0} { // up to the limit, inclusive
		if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(strings.Repeat("x", size)), new(frame)); err != nil {
			t.Fatalf("a message of %d bytes: %v", size, err)
		}
	}
	if n := up.count.Load(); n != 2 {
		t.Fatalf("the upstream saw %d calls, want only the two within the limit", n)
	}
}

func TestTheDefaultMessageLimitIs64KiB(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	conn := dial(t, address)
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(strings.Repeat("x", 65536)), new(frame)); err != nil {
		t.Fatalf("a message of 65536 bytes: %v", err)
	}
	err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(strings.Repeat("x", 65537)), new(frame))
	if st := status.Convert(err); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "(65537 vs. 65536)") {
		t.Fatalf("a message of 65537 bytes: %v, want RESOURCE_EXHAUSTED", err)
	}
}

func TestAMessageOverTheLimitMidStreamEndsTheCallBothWays(t *testing.T) {
	t.Parallel()
	ended := make(chan error, 1)
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		for {
			msg := new(frame)
			if err := stream.RecvMsg(msg); err != nil {
				ended <- stream.Context().Err()
				return err
			}
			if err := stream.SendMsg(msg); err != nil {
				return err
			}
		}
	})
	_, address := startGate(t, target, "--max-message-bytes", "100")
	stream := open(t, context.Background(), dial(t, address), "/test.Echo/Echo")
	if err := stream.SendMsg(bytesFrame("small")); err != nil {
		t.Fatal(err)
	}
	if err := stream.RecvMsg(new(frame)); err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(bytesFrame(strings.Repeat("x", 101))); err != nil {
		t.Fatal(err)
	}
	if st := status.Convert(recvErr(t, stream)); st.Code() != codes.ResourceExhausted ||
		!strings.Contains(st.Message(), "larger than max (101 vs. 100)") {
		t.Fatalf("got %v %q, want gRPC's RESOURCE_EXHAUSTED for a message over the limit", st.Code(), st.Message())
	}
	select {
	case err := <-ended:
		if err != context.Canceled {
			t.Fatalf("the upstream's call ended with %v, want it cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream's call went on after the client's call failed")
	}
}

// All clients share a small pool of connections to the upstream: one per client would
// bring into the Python process the connections the gate is there to keep out.
func TestClientsShareASmallPoolOfUpstreamConnections(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	for range 40 {
		if err := dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
			t.Fatal(err)
		}
	}
	if n := up.connections.Load(); n < 1 || n > 8 {
		t.Fatalf("40 clients made %d connections to the upstream, want a pool of a few (at most 8)", n)
	}
}

// Messages far larger than the 64 KiB windows go through whole, both ways, when the limit
// allows them.
func TestAMessageLargerThanTheWindowsGoesThroughWhole(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-message-bytes", "4000000")
	payload := make([]byte, 3<<20)
	for i := range payload {
		payload[i] = byte(i * 7 / 5)
	}
	reply := new(frame)
	err := dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", &frame{data: payload}, reply,
		grpc.MaxCallRecvMsgSize(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(reply.data, payload) {
		t.Fatalf("%d bytes came back, not the %d sent", len(reply.data), len(payload))
	}
}

// An upstream that goes away mid-call (the server died) ends the client's call with
// UNAVAILABLE: it is not left open.
func TestACallWhoseUpstreamGoesAwayEndsUnavailable(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	stream := openForwarded(t, context.Background(), dial(t, address), up)
	up.server.Stop()
	ended := make(chan error, 1)
	go func() { ended <- stream.RecvMsg(new(frame)) }()
	select {
	case err := <-ended:
		if st := status.Convert(err); st.Code() != codes.Unavailable || strings.Contains(st.Message(), up.socket) {
			t.Fatalf("the call ended with %v, want UNAVAILABLE without the socket's path", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call went on for 5 s after its upstream went away")
	}
}

// Many calls at once from many connections, over the gate's few upstream connections: each
// gets its own answer.
func TestManyCallsAtOnceEachGetTheirOwnAnswer(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	const connections, each = 20, 100
	errs := make(chan error, connections*each)
	for c := range connections {
		conn := dial(t, address)
		for i := range each {
			go func() {
				text := fmt.Sprintf("call %d of connection %d", i, c)
				reply := new(frame)
				err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame(text), reply)
				if err == nil && frameText(reply) != text {
					err = fmt.Errorf("%q came back for %q", frameText(reply), text)
				}
				errs <- err
			}()
		}
	}
	for range connections * each {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("calls still open after 20 s")
		}
	}
}

// A length prefix over --max-message-bytes is refused at once, first message or later: the
// gate does not wait for (or keep) the bytes it announces.
func TestALengthPrefixOverTheLimitIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	c := dialRaw(t, address)
	huge := []byte{0, 0xff, 0xff, 0xff, 0xff, 'a'} // 4 GiB announced, one byte sent
	for _, stream := range []uint32{1, 3} {
		c.headers(stream, "/test.Echo/Echo", false)
		if stream == 3 {
			c.message(stream, "a first message", false)
			up.nextCall(t) // forwarded before the next one
		}
		start := time.Now()
		if err := c.framer.WriteData(stream, false, huge); err != nil {
			t.Fatal(err)
		}
		end := c.end(stream)
		if took := time.Since(start); end.grpcStatus != strconv.Itoa(int(codes.ResourceExhausted)) || took > 2*time.Second {
			t.Fatalf("stream %d: a 4 GiB length prefix ended it %+v after %v, want RESOURCE_EXHAUSTED at once", stream, end, took)
		}
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want the one that sent a first message", n)
	}
}
