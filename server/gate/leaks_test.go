package main

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

func TestForwardedCallsLeaveNothingBehindHoweverTheyEnd(t *testing.T) {
	up := startUpstream(t)
	g, address := startGate(t, up.target(), nil)
	conn := dial(t, address)
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the upstream pool to connect", func() bool {
		for _, c := range g.upstream.conns {
			if c.GetState() != connectivity.Ready {
				return false
			}
		}
		return true
	})
	drained := make(chan struct{}) // the fake upstream reports each call on buffered channels
	defer close(drained)
	go func() {
		for {
			select {
			case <-up.calls:
			case <-up.ended:
			case <-drained:
				return
			}
		}
	}()
	before := runtime.NumGoroutine()

	const each = 100
	var wg sync.WaitGroup
	ends := make(chan error, 3*each)
	for range each {
		wg.Add(3)
		go func() { // the client cancels mid-stream, after an answer
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			stream := open(t, ctx, conn, "/test.Echo/Echo")
			err := stream.SendMsg(bytesFrame("x"))
			if err == nil {
				err = stream.RecvMsg(new(frame))
			}
			cancel()
			if err == nil {
				err = stream.RecvMsg(new(frame))
			}
			ends <- err
		}()
		go func() { // the upstream ends it with a status while the client still sends
			defer wg.Done()
			stream := open(t, context.Background(), conn, "/test.Echo/Fail")
			_ = stream.SendMsg(bytesFrame("x"))
			ends <- stream.RecvMsg(new(frame))
		}()
		go func() { // the client's deadline ends it
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			stream := open(t, ctx, conn, "/test.Echo/Hang")
			_ = stream.SendMsg(bytesFrame("x"))
			ends <- stream.RecvMsg(new(frame))
		}()
	}
	wg.Wait()
	close(ends)
	counts := map[codes.Code]int{}
	for err := range ends {
		counts[status.Code(err)]++
	}
	if counts[codes.Canceled] != each || counts[codes.FailedPrecondition] != each || counts[codes.DeadlineExceeded] != each {
		t.Fatalf("the calls ended %v, want %d each of CANCELLED, FAILED_PRECONDITION, DEADLINE_EXCEEDED", counts, each)
	}
	// Each call had a handler and a relay goroutine in the gate, an upstream stream and a
	// client stream: a leak of any of them is hundreds.
	eventually(t, "the gate to count every call out and its goroutines to end", func() bool {
		return g.open.Load() == 0 && g.forwarded.Load() == 0 && g.admission.callsFrom("ipv4:127.0.0.1") == 0 &&
			runtime.NumGoroutine() <= before+10 // the drainer is counted in before
	})
}
