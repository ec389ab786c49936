package conformance

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestASilentCallIsClosedAtTheFirstMessageTimeoutWithoutReachingTheUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--first-message-timeout", "0.2")
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

// The message has the seconds as Python's "{:g}" writes them, as the Python guard's does.
func TestTheFirstMessageTimeoutMessageIsPythons(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	for given, says := range map[string]string{"0.25": "0.25", "1": "1", "1.5": "1.5", "0.1": "0.1", "1.0": "1"} {
		t.Run(given, func(t *testing.T) {
			t.Parallel()
			_, address := startGate(t, up.target(), "--first-message-timeout", given)
			stream := open(t, context.Background(), dial(t, address), "/test.Echo/Echo")
			wantRefusal(t, recvErr(t, stream), codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT",
				"a stream must send its first message within "+says+" s")
		})
	}
}

func TestTheDefaultFirstMessageTimeoutIs10s(t *testing.T) {
	t.Parallel() // 10 s, beside the others
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	stream := open(t, context.Background(), dial(t, address), "/test.Echo/Echo")
	started := time.Now()
	wantRefusal(t, recvErr(t, stream), codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT",
		"a stream must send its first message within 10 s")
	if took := time.Since(started); took < 9500*time.Millisecond || took > 13*time.Second {
		t.Fatalf("closed after %v, want about 10 s", took)
	}
}

func TestAHeldCallTheClientDropsNeverReachesTheUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--first-message-timeout", "30", "--max-streams-per-address", "1")
	conn := dial(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	call := openHeld(t, ctx, conn)
	probes := refusedSoon(t, conn, codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(1, 1), call)
	cancel()
	// The same channel still works once the gate counted the dropped call out, and no call
	// but the probes and that one reached the upstream.
	eventually(t, "the dropped call to be counted out", func() bool {
		err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame))
		if err != nil {
			wantRefusal(t, err, codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(1, 1))
		}
		return err == nil
	})
	if n := up.count.Load(); n != int64(probes)+1 {
		t.Fatalf("the upstream saw %d calls, want only the %d that sent a message", n, probes+1)
	}
}

func TestCallsPerAddressAreCappedHeldAndForwardedAlike(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-streams-per-address", "2")
	conn := dial(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	openForwarded(t, ctx, conn, up)
	heldCtx, drop := context.WithCancel(ctx)
	call := openHeld(t, heldCtx, conn)
	probes := refusedSoon(t, conn, codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(2, 2), call)
	// Refused whether it would have been held or forwarded, on any connection.
	refused := open(t, ctx, dial(t, address), "/test.Echo/Echo")
	wantRefusal(t, recvErr(t, refused), codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(2, 2))

	drop()
	eventually(t, "the held call counted out", func() bool {
		return conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)) == nil
	})
	if n := up.count.Load(); n != int64(probes)+2 {
		t.Fatalf("the upstream saw %d calls, want %d", n, probes+2)
	}
}

func TestConnectionsWithCallsPerAddressAreCappedAfterStreams(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-connections-per-address", "2", "--max-streams-per-address", "3")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, second, third := dial(t, address), dial(t, address), dial(t, address)
	calls := []refiller{openHeld(t, ctx, first), openHeld(t, ctx, second)}
	refusedSoon(t, third, codes.ResourceExhausted, "TOO_MANY_CONNECTIONS", tooManyConnectionsMessage(2, 2), calls...)
	// A connection already in use may open more calls.
	if err := first.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("a second call on a connection in use: %v", err)
	}
	// The address's streams cap comes first: with 3 calls open, a call on a new connection
	// is refused for the streams. The refused calls were never counted.
	calls = append(calls, openHeld(t, ctx, first))
	refusedSoon(t, first, codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(3, 3), calls...)
	refused := open(t, ctx, third, "/test.Echo/Echo")
	wantRefusal(t, recvErr(t, refused), codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(3, 3))
}

func TestTheDefaultCapsAre5000CallsAnd500ConnectionsPerAddress(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	calls := holdRaw(t, address, 5000)
	refusedSoon(t, dial(t, address), codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(5000, 5000), calls)
	_ = calls.c.conn.Close()

	_, address = startGate(t, up.target())
	var connections []refiller
	for range 500 {
		connections = append(connections, holdRaw(t, address, 1))
	}
	refusedSoon(t, dial(t, address), codes.ResourceExhausted, "TOO_MANY_CONNECTIONS", tooManyConnectionsMessage(500, 500), connections...)
}

func TestSilentStreamsLeaveNothingCounted(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--first-message-timeout", "0.1", "--max-streams-per-address", "200")
	conn := dial(t, address)
	var streams []grpc.ClientStream
	for range 200 {
		streams = append(streams, open(t, context.Background(), conn, "/test.Echo/Play"))
	}
	for _, stream := range streams {
		err := recvErr(t, stream)
		wantRefusal(t, err, codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT", "a stream must send its first message within 0.1 s")
	}
	if n := up.count.Load(); n != 0 {
		t.Fatalf("the upstream saw %d calls", n)
	}
	wantNoCallsCounted(t, up, address, 200)
}

func TestForwardedCallsLeaveNothingCountedHoweverTheyEnd(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	const each = 100
	_, address := startGate(t, up.target(), "--max-streams-per-address", strconv.Itoa(3*each))
	conn := dial(t, address)
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
	wantNoCallsCounted(t, up, address, 3*each)
}

// A held call ends at its client's deadline (grpc-timeout), from a client that does not
// cancel it itself, and its place is freed; so does a forwarded one.
func TestTheClientsDeadlineEndsAHeldCallAndFreesItsPlace(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-streams-per-address", "1")
	c := dialRaw(t, address)
	for _, call := range []struct {
		stream  uint32
		method  string
		message bool
	}{{1, "/test.Echo/Echo", false}, {3, "/test.Echo/Hang", true}} {
		start := time.Now()
		c.headers(call.stream, call.method, false, "grpc-timeout", "200m")
		if call.message {
			c.message(call.stream, "x", false)
		}
		// DEADLINE_EXCEEDED, or cancelled (RST_STREAM, or CANCELLED when the upstream's reset
		// at its own deadline comes first): any ends it, a gRPC client reports its deadline.
		end := c.end(call.stream)
		if took := time.Since(start); took < 150*time.Millisecond || took > 3*time.Second ||
			!(end.reset || end.grpcStatus == strconv.Itoa(int(codes.DeadlineExceeded)) ||
				end.grpcStatus == strconv.Itoa(int(codes.Canceled))) {
			t.Fatalf("%s with a deadline of 0.2 s ended %+v after %v", call.method, end, took)
		}
		eventually(t, "the call's place to be freed", func() bool {
			return dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)) == nil
		})
	}
}

// A first message is a whole one: a client that sends part of it (its length prefix, or a
// few of the bytes it announced) and stops is a silent stream, closed at the first-message
// timeout, and nothing reaches the upstream.
func TestPartOfAFirstMessageIsNotAFirstMessage(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--first-message-timeout", "0.3")
	c := dialRaw(t, address)
	for i, part := range [][]byte{ // in order: stream ids only grow
		{0, 0},                           // two bytes of the length prefix
		{0, 0, 0, 0, 100, 'a', 'b', 'c'}, // 3 of the 100 bytes announced
	} {
		stream := uint32(2*i + 1)
		start := time.Now()
		c.headers(stream, "/test.Echo/Echo", false)
		if err := c.framer.WriteData(stream, false, part); err != nil {
			t.Fatal(err)
		}
		end := c.end(stream)
		if took := time.Since(start); end.grpcStatus != strconv.Itoa(int(codes.DeadlineExceeded)) ||
			took < 250*time.Millisecond || took > 3*time.Second {
			t.Fatalf("stream %d (%d bytes of a message) ended %+v after %v, want DEADLINE_EXCEEDED after about 0.3 s",
				stream, len(part), end, took)
		}
	}
	if n := up.count.Load(); n != 0 {
		t.Fatalf("the upstream saw %d calls of streams that never sent a whole message", n)
	}
}

// A connection counts while it has calls: once its last call has ended, another connection
// may take its place.
func TestAConnectionWhoseCallsHaveEndedNoLongerCounts(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-connections-per-address", "1")
	first, second := dial(t, address), dial(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	openForwarded(t, ctx, first, up)
	openForwarded(t, ctx, first, up) // two calls, one connection
	err := second.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame))
	wantRefusal(t, err, codes.ResourceExhausted, "TOO_MANY_CONNECTIONS", tooManyConnectionsMessage(1, 1))
	cancel()
	eventually(t, "the first connection to stop counting", func() bool {
		err := second.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame))
		if err != nil {
			wantRefusal(t, err, codes.ResourceExhausted, "TOO_MANY_CONNECTIONS", tooManyConnectionsMessage(1, 1))
		}
		return err == nil
	})
}
