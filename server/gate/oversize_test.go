package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestAMessageOverTheLimitMidStreamEndsTheCallBothWays(t *testing.T) {
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
	_, address := startGate(t, target, func(c *config) { c.maxMessageBytes = 100 })
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
