package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestMetadataOverPythonsHardLimitIsRefusedAtOnceAndNeverReachesTheUpstream(t *testing.T) {
	up := startUpstream(t)
	g, address := startGate(t, up.target(), nil)
	conn := dial(t, address)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-big", strings.Repeat("b", 20<<10))
	stream := open(t, ctx, conn, "/test.Echo/Echo") // sends no message: would be held
	st := status.Convert(recvErr(t, stream))
	if st.Code() != codes.ResourceExhausted ||
		!strings.HasPrefix(st.Message(), "received metadata size exceeds hard limit (") ||
		!strings.HasSuffix(st.Message(), " vs. 16384)") {
		t.Fatalf("got %v %q, want gRPC core's RESOURCE_EXHAUSTED", st.Code(), st.Message())
	}
	if g.open.Load() != 0 || up.count.Load() != 0 {
		t.Fatalf("the call was held (%d) or forwarded (%d)", g.open.Load(), up.count.Load())
	}
	// Up to the limit the upstream decides (the Python server refuses over 8 KiB itself).
	ctx = metadata.AppendToOutgoingContext(context.Background(), "x-big", strings.Repeat("b", 12<<10))
	if err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	if got := len(up.nextCall(t).md.Get("x-big")[0]); got != 12<<10 {
		t.Fatalf("the upstream saw %d bytes of x-big", got)
	}
}

func TestAHeaderBlockOverTheTransportCapClosesTheConnectionUnread(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	var fields []string // many small fields, or one large one
	for i := range 80 {
		fields = append(fields, fmt.Sprintf("x-field-%d", i), strings.Repeat("b", 1000))
	}
	for _, block := range [][]string{fields, {"x-huge", strings.Repeat("h", 1<<20)}} {
		c := dialRaw(t, address)
		// Closed while it is written, or after.
		if err := c.tryHeaders(1, "/test.Echo/Echo", false, block...); err == nil && !c.closed() {
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
