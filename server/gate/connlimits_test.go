package main

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// closedAfter reads what the gate sends on conn, answering nothing (no ping, no settings),
// until it closes the connection; it returns the GOAWAY seen (nil if none) and when the
// socket closed, measured from start. Fails after 10 s.
func closedAfter(t *testing.T, conn net.Conn, start time.Time) (*http2.GoAwayFrame, time.Duration) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	framer := http2.NewFramer(nil, conn)
	var goAway *http2.GoAwayFrame
	for {
		frame, err := framer.ReadFrame()
		if err != nil {
			if isTimeout(err) {
				t.Fatal("the gate kept the connection open for 10 s")
			}
			return goAway, time.Since(start)
		}
		if f, ok := frame.(*http2.GoAwayFrame); ok && goAway == nil {
			goAway = &http2.GoAwayFrame{ErrCode: f.ErrCode, LastStreamID: f.LastStreamID}
		}
	}
}

func TestAConnectionThatNeverStartsHTTP2IsClosedAfterTheHandshakeTimeout(t *testing.T) {
	t.Parallel() // slow (timeouts): runs beside the others, after the goroutine counts
	up := startUpstream(t)
	_, address := startGate(t, up.target(), func(c *config) {
		c.handshakeTimeout = 400 * time.Millisecond
		c.maxConnectionIdle = 0 // only the handshake timeout can close it
	})
	for _, sent := range []string{"", http2.ClientPreface[:10]} { // nothing, or half the preface
		conn, err := net.Dial("tcp", address)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := conn.Write([]byte(sent)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1024)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for err == nil {
			_, err = conn.Read(buf) // the server's SETTINGS, then the close
		}
		if isTimeout(err) {
			t.Fatalf("after %q the connection was still open after 10 s", sent)
		}
		if took := time.Since(start); took < 300*time.Millisecond || took > 3*time.Second {
			t.Fatalf("after %q the connection closed after %v, want about 0.4 s", sent, took)
		}
	}
}

func TestAConnectionWithoutCallsIsClosedAfterMaxConnectionIdle(t *testing.T) {
	t.Parallel() // slow (timeouts): runs beside the others, after the goroutine counts
	up := startUpstream(t)
	_, address := startGate(t, up.target(), func(c *config) { c.maxConnectionIdle = 400 * time.Millisecond })
	c := dialRaw(t, address) // HTTP/2 set up, then no call
	start := time.Now()
	goAway, took := closedAfter(t, c.conn, start)
	if goAway == nil || goAway.ErrCode != http2.ErrCodeNo {
		t.Fatalf("closed with GOAWAY %+v, want a GOAWAY with NO_ERROR", goAway)
	}
	if took < 300*time.Millisecond || took > 8*time.Second {
		t.Fatalf("closed after %v, want after about 0.4 s, and at most 5 s more for the drain ping it never answers", took)
	}
}

func TestAPeerThatStopsAnsweringPingsIsDroppedAndItsCallEndsUpstream(t *testing.T) {
	t.Parallel() // slow (timeouts): runs beside the others, after the goroutine counts
	up := startUpstream(t)
	_, address := startGate(t, up.target(), func(c *config) {
		c.keepalive = 300 * time.Millisecond
		c.keepaliveTimeout = 300 * time.Millisecond
	})
	c := dialRaw(t, address)
	c.headers(1, "/test.Echo/Hang", false)
	c.message(1, "x", false)
	up.nextCall(t)
	start := time.Now()
	_, took := closedAfter(t, c.conn, start) // never answers a ping
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Fatalf("closed after %v, want after about 0.6 s (a ping, then its timeout)", took)
	}
	select {
	case err := <-up.ended:
		if err != context.Canceled {
			t.Fatalf("the upstream's call ended with %v, want it cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the dropped peer's call went on upstream")
	}
}

func TestPingsMoreOftenThanEvery10sWithoutCallsCloseTheConnection(t *testing.T) {
	t.Parallel() // slow (timeouts): runs beside the others, after the goroutine counts
	up := startUpstream(t)
	_, address := startGate(t, up.target(), nil)
	c := dialRaw(t, address)
	start := time.Now()
	go func() {
		for i := 0; i < 10; i++ {
			if c.framer.WritePing(false, [8]byte{byte(i)}) != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	goAway, _ := closedAfter(t, c.conn, start)
	if goAway == nil || goAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("closed with GOAWAY %+v, want ENHANCE_YOUR_CALM (too_many_pings)", goAway)
	}
}

func TestAnOldConnectionIsToldToGoAwayAndItsCallsCutAfterTheGrace(t *testing.T) {
	t.Parallel() // slow (timeouts): runs beside the others, after the goroutine counts
	up := startUpstream(t)
	_, address := startGate(t, up.target(), func(c *config) {
		c.maxConnectionAge = 300 * time.Millisecond
		c.maxConnectionAgeGrace = 300 * time.Millisecond
	})
	conn := dial(t, address)
	stream := open(t, context.Background(), conn, "/test.Echo/Hang")
	if err := stream.SendMsg(bytesFrame("x")); err != nil {
		t.Fatal(err)
	}
	up.nextCall(t)
	start := time.Now()
	if code := status.Code(recvErr(t, stream)); code != codes.Unavailable {
		t.Fatalf("the old connection's call ended with %v, want UNAVAILABLE", code)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cut after %v, want after about 0.6 s", took)
	}
	select {
	case err := <-up.ended:
		if err != context.Canceled {
			t.Fatalf("the upstream's call ended with %v, want it cancelled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cut call went on upstream")
	}
	// The channel reconnects by itself: a new call goes through on a new connection.
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
}
