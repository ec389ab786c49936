package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// What one stream may have in flight between a client and the upstream when one end stops
// reading: each hop's 64 KiB window and write quota and a 16 KiB message in hand, 288 KiB in
// all (measured: 288 and 272). With the windows gRPC-Go grows by its BDP estimate, a client
// piled 1.1-11 MiB per stream into the gate (measured) before they were fixed.
const mostInFlightPerStream = 512 << 10

// startStaticUpstream runs handler as an upstream on a Unix socket with fixed 64 KiB windows,
// as a server that reads slowly would have: what piles up is the gate's, not the upstream's.
func startStaticUpstream(t *testing.T, handler grpc.StreamHandler) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "upstream.sock")
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	server := grpc.NewServer(grpc.UnknownServiceHandler(handler), grpc.ForceServerCodecV2(rawCodec{}),
		grpc.StaticStreamWindowSize(64<<10), grpc.StaticConnWindowSize(64<<10))
	go func() { _ = server.Serve(listener) }()
	t.Cleanup(server.Stop)
	return "unix:" + socket
}

// dialStatic is a client with the smallest windows HTTP/2 allows: one that wants the gate to
// hold what it does not read.
func dialStatic(t *testing.T, address string) *dialed {
	return dial(t, address, grpc.WithStaticStreamWindowSize(64<<10), grpc.WithStaticConnWindowSize(64<<10))
}

// mostOf is the largest of the counts after 2 s of load (the windows grew within 1 s).
func mostOf(counts []atomic.Int64) int64 {
	time.Sleep(2 * time.Second)
	var most int64
	for i := range counts {
		most = max(most, counts[i].Load())
	}
	return most
}

func TestAClientSendingFasterThanTheUpstreamReadsIsHeldBackPerStream(t *testing.T) {
	t.Parallel() // slow (timeouts): runs beside the others, after the goroutine counts
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		if err := stream.RecvMsg(new(frame)); err != nil { // reads the first message only
			return err
		}
		<-stream.Context().Done()
		return nil
	})
	_, address := startGate(t, target, nil)
	conn := dialStatic(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Many streams at once on one connection: the load that grew gRPC-Go's windows.
	sent := make([]atomic.Int64, 40)
	chunk := strings.Repeat("r", 16<<10)
	for i := range sent {
		stream := open(t, ctx, conn, "/test.Sink/Sink")
		go func() {
			for stream.SendMsg(bytesFrame(chunk)) == nil {
				sent[i].Add(int64(len(chunk)))
			}
		}()
	}
	if most := mostOf(sent); most > mostInFlightPerStream {
		t.Fatalf("a client got %d KiB into one stream the upstream does not read, want at most %d KiB",
			most>>10, mostInFlightPerStream>>10)
	}
}

func TestAClientThatNeverReadsHoldsTheUpstreamBackPerStream(t *testing.T) {
	t.Parallel() // slow (timeouts): runs beside the others, after the goroutine counts
	var streams atomic.Int64
	sent := make([]atomic.Int64, 40)
	chunk := strings.Repeat("e", 16<<10)
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		i := streams.Add(1) - 1
		if err := stream.RecvMsg(new(frame)); err != nil {
			return err
		}
		for stream.SendMsg(bytesFrame(chunk)) == nil { // events, as fast as they are taken
			sent[i].Add(int64(len(chunk)))
		}
		return nil
	})
	_, address := startGate(t, target, nil)
	conn := dialStatic(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range sent {
		stream := open(t, ctx, conn, "/test.Flood/Watch")
		if err := stream.SendMsg(bytesFrame("watch")); err != nil {
			t.Fatal(err)
		}
	}
	if most := mostOf(sent); most > mostInFlightPerStream {
		t.Fatalf("the upstream got %d KiB out on one stream its client never reads, want at most %d KiB",
			most>>10, mostInFlightPerStream>>10)
	}
}
