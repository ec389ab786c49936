package conformance

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

func TestOnSIGTERMNewAndHeldCallsAreRefusedForwardedOnesEndThenItExits0(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	p, address := startGate(t, up.target(), "--shutdown-timeout", "0.7", "--first-message-timeout", "30")
	conn := dial(t, address)
	ctx := context.Background()
	if err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	up.nextCall(t)
	endsByItself := open(t, ctx, conn, "/test.Echo/Stop") // the upstream ends it at shutdown
	if err := endsByItself.SendMsg(bytesFrame("x")); err != nil {
		t.Fatal(err)
	}
	up.nextCall(t)
	cutByGate := openForwarded(t, ctx, conn, up)  // never ends by itself
	held := open(t, ctx, conn, "/test.Echo/Echo") // no first message
	time.Sleep(100 * time.Millisecond)            // let the gate take the held call in

	stopped := time.Now()
	p.signal(t, syscall.SIGTERM)
	wantRefusal(t, recvErr(t, held), codes.Unavailable, "SERVER_SHUTTING_DOWN", shuttingDownMessage)
	// The port stays open and new calls, on old connections or new ones, are refused.
	for _, c := range []*dialed{conn, dial(t, address)} {
		err := c.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame))
		wantRefusal(t, err, codes.Unavailable, "SERVER_SHUTTING_DOWN", shuttingDownMessage)
	}
	close(up.release)
	wantRefusal(t, recvErr(t, endsByItself), codes.Unavailable, "SERVER_SHUTTING_DOWN", "the upstream ended this stream")
	wantRefusal(t, recvErr(t, cutByGate), codes.Unavailable, "SERVER_SHUTTING_DOWN", shuttingDownMessage)
	if took := time.Since(stopped); took < 600*time.Millisecond {
		t.Fatalf("the forwarded call was cut after %v, before --shutdown-timeout 0.7", took)
	}
	up.wantCancelled(t, "the call cut at the end of --shutdown-timeout")
	if code := p.exitCode(t, 5*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	if extra, ok := <-p.lines; ok {
		t.Fatalf("stdout after the ready line: %q", extra)
	}
}

func TestAGateWithoutCallsExitsAtOnceOnSIGTERMOrSIGINT(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		p, address := startGate(t, up.target())
		// A connection without calls does not hold the exit up either.
		if err := dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
			t.Fatal(err)
		}
		p.signal(t, sig)
		if code := p.exitCode(t, 3*time.Second); code != 0 {
			t.Fatalf("exit code %d after %v, want 0", code, sig)
		}
	}
}

func TestASecondSignalStopsTheGateAtOnceWithExitCode1(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	p, address := startGate(t, up.target(), "--shutdown-timeout", "60", "--max-streams-per-address", "1")
	conn := dial(t, address)
	openForwarded(t, context.Background(), conn, up)
	refusedSoon(t, conn, codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(1, 1))
	p.signal(t, syscall.SIGTERM)
	// Shutting down is the first refusal, before the address's full streams cap.
	eventually(t, "the gate to refuse new calls with SERVER_SHUTTING_DOWN", func() bool {
		err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame))
		ok, _ := isRefusal(err, codes.Unavailable, "SERVER_SHUTTING_DOWN", shuttingDownMessage)
		return ok
	})
	p.signal(t, syscall.SIGINT)
	if code := p.exitCode(t, 3*time.Second); code != 1 {
		t.Fatalf("exit code %d after a second signal, want 1", code)
	}
}

func TestAClientThatNeverReadsDoesNotHoldTheStopUp(t *testing.T) {
	t.Parallel()
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		if err := stream.RecvMsg(new(frame)); err != nil {
			return err
		}
		chunk := strings.Repeat("e", 16<<10)
		for stream.SendMsg(bytesFrame(chunk)) == nil { // events until the call is cut
		}
		return nil
	})
	p, address := startGate(t, target, "--shutdown-timeout", "0.5")
	stream := open(t, context.Background(), dialStatic(t, address), "/test.Flood/Watch")
	if err := stream.SendMsg(bytesFrame("watch")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the windows fill: the gate's send to the client blocks
	stopped := time.Now()
	p.signal(t, syscall.SIGTERM)
	if code := p.exitCode(t, 10*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	// --shutdown-timeout, then the 0.5 s the README gives a client that never reads: the
	// Python server kills a gate 2 s after its --shutdown-timeout.
	if took := time.Since(stopped); took > 2*time.Second {
		t.Fatalf("the gate took %v to exit, want at most 2 s (--shutdown-timeout 0.5, then 0.5 s)", took)
	}
}

// The gate exits as soon as its forwarded calls have ended, not at the end of
// --shutdown-timeout.
func TestOnSIGTERMTheGateExitsOnceItsForwardedCallsHaveEnded(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	p, address := startGate(t, up.target(), "--shutdown-timeout", "30")
	stream := open(t, context.Background(), dial(t, address), "/test.Echo/Stop")
	if err := stream.SendMsg(bytesFrame("x")); err != nil {
		t.Fatal(err)
	}
	up.nextCall(t)
	p.signal(t, syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond)
	select {
	case <-p.exited:
		t.Fatal("the gate exited while a forwarded call was still open")
	default:
	}
	released := time.Now()
	close(up.release)
	wantRefusal(t, recvErr(t, stream), codes.Unavailable, "SERVER_SHUTTING_DOWN", "the upstream ended this stream")
	if code := p.exitCode(t, 5*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	if took := time.Since(released); took > 2*time.Second {
		t.Fatalf("the gate exited %v after its last forwarded call ended, want at once", took)
	}
}
