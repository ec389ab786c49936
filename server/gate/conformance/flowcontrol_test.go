package conformance

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
)

// What one stream may have in flight between a client and the upstream when one end stops
// reading: each hop's 64 KiB window and write quota and a 16 KiB message in hand, about 288
// KiB in all (the Go gate: 288 and 272). With windows grown by a BDP estimate, a client piled
// 1.1-11 MiB per stream into the gate.
const mostInFlightPerStream = 512 << 10

// mostOf is the largest of the counts after 2 s of load (grown windows grow within 1 s).
func mostOf(counts []atomic.Int64) int64 {
	time.Sleep(2 * time.Second)
	var most int64
	for i := range counts {
		most = max(most, counts[i].Load())
	}
	return most
}

func TestAClientSendingFasterThanTheUpstreamReadsIsHeldBackPerStream(t *testing.T) {
	t.Parallel()
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		if err := stream.RecvMsg(new(frame)); err != nil { // reads the first message only
			return err
		}
		<-stream.Context().Done()
		return nil
	})
	_, address := startGate(t, target)
	conn := dialStatic(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Many streams at once on one connection: the load that grows windows by BDP estimates.
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
	t.Parallel()
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
	_, address := startGate(t, target)
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

// The gate's connections to the upstream are shared by every client, so what a client does
// not read must hold back its own streams only. Here one client opens many streams and reads
// none; a call of another client must still get its answer. (With the upstream connections'
// window shared by the data of every stream not yet taken by its client, 16 such streams per
// connection stopped every response to everyone.)
func TestClientsThatNeverReadDoNotHoldUpOtherClientsCalls(t *testing.T) {
	t.Parallel()
	chunk := strings.Repeat("w", 16<<10)
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		msg := new(frame)
		if err := stream.RecvMsg(msg); err != nil {
			return err
		}
		if method != "/test.Flood/Watch" {
			return stream.SendMsg(msg) // an echo: one message back, then OK
		}
		for stream.SendMsg(bytesFrame(chunk)) == nil {
		}
		return nil
	})
	_, address := startGate(t, target)
	greedy := dialStatic(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range 200 {
		stream := open(t, ctx, greedy, "/test.Flood/Watch")
		if err := stream.SendMsg(bytesFrame("watch")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // every stream's windows fill
	healthy := dial(t, address)
	for i := range 3 {
		call, done := context.WithTimeout(context.Background(), 5*time.Second)
		reply := new(frame)
		err := healthy.Invoke(call, "/test.Echo/Echo", bytesFrame("move"), reply)
		done()
		if err != nil || frameText(reply) != "move" {
			t.Fatalf("call %d of another client beside 200 streams that are never read: %v, reply %q",
				i, err, frameText(reply))
		}
	}
}
