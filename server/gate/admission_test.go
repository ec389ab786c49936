package main

import (
	"context"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestASilentCallIsClosedAtTheFirstMessageTimeoutWithoutReachingTheUpstream(t *testing.T) {
	up := startUpstream(t)
	_, address := startGate(t, up.target(), func(c *config) { c.firstMessageTimeout = 200 * time.Millisecond })
	stream := open(t, context.Background(), dial(t, address), "/test.Echo/Echo")
	started := time.Now()
	err := recvErr(t, stream)
	wantRefusal(t, err, codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT", "a stream must send its first message within 0.2 s")
	if took := time.Since(started); took < 150*time.Millisecond || took > 3*time.Second {
		t.Fatalf("closed after %v, want about 0.2 s", took)
	}
	if n := up.count.Load(); n != 0 {
		t.Fatalf("the upstream saw %d calls of a stream that never sent a message", n)
	}
}

func TestTheFirstMessageTimeoutMessageIsPythons(t *testing.T) {
	for timeout, want := range map[time.Duration]string{
		10 * time.Second:        "10",
		1500 * time.Millisecond: "1.5",
		250 * time.Millisecond:  "0.25",
	} {
		wantRefusal(t, firstMessageLate(timeout), codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT",
			"a stream must send its first message within "+want+" s")
	}
}

func TestAHeldCallTheClientDropsNeverReachesTheUpstream(t *testing.T) {
	up := startUpstream(t)
	g, address := startGate(t, up.target(), func(c *config) { c.firstMessageTimeout = 30 * time.Second })
	conn := dial(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	open(t, ctx, conn, "/test.Echo/Echo")
	eventually(t, "the gate to hold the call", func() bool { return g.open.Load() == 1 })
	cancel()
	eventually(t, "the gate to count the call out", func() bool { return g.open.Load() == 0 })
	// The same channel still works, and that call (sent after the dropped one) is the first
	// the upstream sees.
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want only the one that sent a message", n)
	}
}

func TestCallsPerAddressAreCappedHeldAndForwardedAlike(t *testing.T) {
	up := startUpstream(t)
	g, address := startGate(t, up.target(), func(c *config) { c.maxStreamsPerAddress = 2 })
	conn := dial(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	forwarded := open(t, ctx, conn, "/test.Echo/Hang")
	if err := forwarded.SendMsg(bytesFrame("x")); err != nil {
		t.Fatal(err)
	}
	up.nextCall(t)
	heldCtx, drop := context.WithCancel(ctx)
	open(t, heldCtx, conn, "/test.Echo/Echo") // held: no first message
	eventually(t, "two calls in the gate", func() bool { return g.open.Load() == 2 })

	refused := open(t, ctx, conn, "/test.Echo/Echo")
	wantRefusal(t, recvErr(t, refused), codes.ResourceExhausted, "TOO_MANY_STREAMS",
		"this address has 2 calls open, the most the server allows (2); close some first")

	drop()
	eventually(t, "the held call counted out", func() bool { return g.open.Load() == 1 })
	if err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("a call after one was closed: %v", err)
	}
}

func TestConnectionsWithCallsPerAddressAreCapped(t *testing.T) {
	up := startUpstream(t)
	g, address := startGate(t, up.target(), func(c *config) { c.maxConnectionsPerAddress = 2 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, second, third := dial(t, address), dial(t, address), dial(t, address)
	open(t, ctx, first, "/test.Echo/Echo")
	open(t, ctx, second, "/test.Echo/Echo")
	eventually(t, "two held calls", func() bool { return g.open.Load() == 2 })

	refused := open(t, ctx, third, "/test.Echo/Echo")
	wantRefusal(t, recvErr(t, refused), codes.ResourceExhausted, "TOO_MANY_CONNECTIONS",
		"this address has 2 connections in use, the most the server allows (2); share a channel")
	// A connection already in use may open more calls.
	if err := first.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("a second call on a connection in use: %v", err)
	}
	if got := g.admission.callsFrom("ipv4:127.0.0.1"); got != 2 {
		t.Fatalf("%d calls counted from 127.0.0.1, want the two held ones", got)
	}
}

func TestSilentStreamsLeaveNothingBehind(t *testing.T) {
	up := startUpstream(t)
	g, address := startGate(t, up.target(), func(c *config) { c.firstMessageTimeout = 100 * time.Millisecond })
	conn := dial(t, address)
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	var streams []grpc.ClientStream
	for range 200 {
		streams = append(streams, open(t, context.Background(), conn, "/test.Echo/Play"))
	}
	for _, stream := range streams {
		if code := status.Code(recvErr(t, stream)); code != codes.DeadlineExceeded {
			t.Fatalf("a silent stream ended with %v", code)
		}
	}
	// Every goroutine the gate (and the client) started for them has ended. (A few may come
	// and go meanwhile, e.g. the upstream pool's connections still being made: a leak is one
	// or more per stream, 200 or more.)
	for end := time.Now().Add(5 * time.Second); g.open.Load() != 0 || runtime.NumGoroutine() > before+20; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the silent streams:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls", n)
	}
}
