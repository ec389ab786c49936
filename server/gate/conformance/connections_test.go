package conformance

import (
	"context"
	"io"
	"net"
	"os/exec"
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

// The limits a client must keep to are in the gate's first SETTINGS frame: a client holds its
// calls beyond --max-streams-per-connection (unrefused, until one ends), sends no more
// metadata than the cap, no more per stream than the fixed 64 KiB window.
func TestTheGateAdvertisesItsStreamMetadataAndWindowLimits(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	for _, c := range []struct {
		option  []string
		streams uint32
	}{
		{[]string{"--max-streams-per-connection", "7"}, 7},
		{nil, 10000}, // the default
		{[]string{"--max-streams-per-connection", "99999999999"}, 1<<31 - 1}, // no practical limit: the most
	} {
		_, address := startGate(t, up.target(), c.option...)
		raw := dialRaw(t, address)
		_ = raw.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		frame, err := raw.framer.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		settings, ok := frame.(*http2.SettingsFrame)
		if !ok || settings.IsAck() {
			t.Fatalf("the gate's first frame is %v, want its SETTINGS", frame)
		}
		for id, want := range map[http2.SettingID]uint32{
			http2.SettingMaxConcurrentStreams: c.streams,
			http2.SettingMaxHeaderListSize:    64 << 10,
			http2.SettingInitialWindowSize:    64 << 10,
		} {
			got, ok := settings.Value(id)
			if id == http2.SettingMaxConcurrentStreams && want == 1<<31-1 && (!ok || got >= want) {
				continue // larger, or unset (unlimited): no practical limit too
			}
			if !ok || got != want {
				t.Errorf("%v %v: %d (sent: %v), want %d", c.option, id, got, ok, want)
			}
		}
	}
}

func TestAConnectionThatNeverStartsHTTP2IsClosedAfterTheHandshakeTimeout(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	// Only the handshake timeout can close it.
	_, address := startGate(t, up.target(), "--handshake-timeout", "0.4", "--max-connection-idle", "0")
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
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-connection-idle", "0.4")
	c := dialRaw(t, address) // HTTP/2 set up, then no call
	start := time.Now()
	goAway, took := closedAfter(t, c.conn, start)
	if goAway == nil || goAway.ErrCode != http2.ErrCodeNo {
		t.Fatalf("closed with GOAWAY %+v, want a GOAWAY with NO_ERROR", goAway)
	}
	if took < 300*time.Millisecond || took > 8*time.Second {
		t.Fatalf("closed after %v, want after about 0.4 s, and at most 5 s more for a drain ping it never answers", took)
	}
}

func TestAPeerThatStopsAnsweringPingsIsDroppedAndItsCallEndsUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--keepalive", "0.3", "--keepalive-timeout", "0.3", "--log-level", "debug")
	c := dialRaw(t, address)
	c.headers(1, "/test.Echo/Hang", false)
	c.message(1, "x", false)
	up.nextCall(t)
	start := time.Now()
	_, took := closedAfter(t, c.conn, start) // never answers a ping
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Fatalf("closed after %v, want after about 0.6 s (a ping, then its timeout)", took)
	}
	up.wantCancelled(t, "the peer was dropped")

	// A peer that answers the pings keeps its connection and its calls (a timeout that a
	// loaded machine's client meets easily).
	_, address = startGate(t, up.target(), "--keepalive", "0.2", "--keepalive-timeout", "1", "--log-level", "debug")
	conn := dial(t, address)
	stream := openForwarded(t, context.Background(), conn, up)
	time.Sleep(2500 * time.Millisecond) // ten pings
	select {
	case err := <-up.ended:
		t.Fatalf("a call of a peer that answers pings ended upstream: %v", err)
	default:
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("a call on the connection of a peer that answers pings: %v", err)
	}
}

// Clients may ping every 10 s even without calls, as the Python server allows; more often is
// abuse: the connection is closed with ENHANCE_YOUR_CALM (too_many_pings), as gRPC does.
func TestPingsMoreOftenThanEvery10sWithoutCallsCloseTheConnection(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	c := dialRaw(t, address)
	start := time.Now()
	go func() {
		for i := range 10 {
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
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-connection-age", "0.3", "--max-connection-age-grace", "0.3")
	conn := dial(t, address)
	stream := openForwarded(t, context.Background(), conn, up)
	start := time.Now()
	if code := status.Code(recvErr(t, stream)); code != codes.Unavailable {
		t.Fatalf("the old connection's call ended with %v, want UNAVAILABLE", code)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cut after %v, want after about 0.6 s", took)
	}
	up.wantCancelled(t, "the call was cut")
	// The channel reconnects by itself: a new call goes through on a new connection.
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
}

// A client that opens more streams than --max-streams-per-connection (ignoring the SETTINGS)
// has the extra ones refused by HTTP/2 (RST_STREAM, or the connection closed), unforwarded.
func TestStreamsPastTheConnectionsLimitAreRefusedUnforwarded(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-streams-per-connection", "3", "--first-message-timeout", "30")
	c := dialRaw(t, address)
	for stream := uint32(1); stream <= 7; stream += 2 {
		c.headers(stream, "/test.Echo/Echo", false)
	}
	c.message(7, "x", true)
	if end := c.end(7); !end.reset && !end.goAway {
		t.Fatalf("the 4th stream on a connection of at most 3 ended %+v, want it refused", end)
	}
	time.Sleep(200 * time.Millisecond)
	if n := up.count.Load(); n != 0 {
		t.Fatalf("the upstream saw %d calls, want none", n)
	}
}

// The SETTINGS frame of the gate's connections to the upstream: stream windows fixed at
// 64 KiB there too, never raised later, so that what the server streams to a client that does
// not read waits in the server, not by the megabyte in the gate.
func TestTheGatesUpstreamConnectionsHaveFixed64KiBStreamWindows(t *testing.T) {
	t.Parallel()
	socket := t.TempDir() + "/upstream.sock"
	listener, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	_, address := startGate(t, "unix:"+socket)
	go func() { // a call makes the gate connect if it has not yet
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = dial(t, address).Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame))
	}()
	conn, err := listener.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	preface := make([]byte, len(http2.ClientPreface))
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadFull(conn, preface); err != nil || string(preface) != http2.ClientPreface {
		t.Fatalf("the gate's upstream connection began %q (%v), want the HTTP/2 preface", preface, err)
	}
	framer := http2.NewFramer(conn, conn)
	_ = framer.WriteSettings()
	var windows []uint32
	for {
		frame, err := framer.ReadFrame()
		if err != nil { // the read deadline: 3 s of what the gate sends
			break
		}
		if settings, ok := frame.(*http2.SettingsFrame); ok && !settings.IsAck() {
			if window, ok := settings.Value(http2.SettingInitialWindowSize); ok {
				windows = append(windows, window)
			}
		}
	}
	if len(windows) == 0 || windows[0] != 64<<10 {
		t.Fatalf("SETTINGS_INITIAL_WINDOW_SIZE %v on the upstream connection, want 65536 in its first SETTINGS", windows)
	}
	for _, window := range windows {
		if window != 64<<10 {
			t.Fatalf("SETTINGS_INITIAL_WINDOW_SIZE %v on the upstream connection, want 65536 only", windows)
		}
	}
}

// The gate holds every client's connection, so it needs as many file descriptors as the
// system lets it have, not the soft limit it was started with (often 1024, where the idle
// soak alone holds 10,000 connections): it raises the soft limit to the hard one, as the Go
// runtime does for any Go program. Here it starts with a soft limit of 256 and must still
// answer a call beside 400 idle connections.
func TestTheGateIsNotBoundByTheSoftLimitOfOpenFiles(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	args := []string{"--listen", "127.0.0.1:0", "--upstream", up.target()}
	shell := exec.Command("/bin/sh", append([]string{"-c", `ulimit -S -n 256 && exec "$0" "$@"`, binary}, args...)...)
	p := startCommand(t, shell, secretEnv(), args)
	address := p.ready(t, "127.0.0.1")
	for i := range 400 {
		conn, err := net.DialTimeout("tcp", address, 2*time.Second)
		if err != nil {
			t.Fatalf("connection %d, started with a soft limit of 256 open files: %v", i, err)
		}
		t.Cleanup(func() { _ = conn.Close() })
		if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
			t.Fatal(err)
		}
		if err := http2.NewFramer(conn, nil).WriteSettings(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := dial(t, address).Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("a call beside 400 idle connections, started with a soft limit of 256 open files: %v", err)
	}
}

// A connection whose only stream never finished its header block has no call: it is closed
// at --max-connection-idle like any connection without calls.
func TestAConnectionWithAnUnfinishedHeaderBlockIsIdle(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target(), "--max-connection-idle", "0.4")
	c := dialRaw(t, address)
	start := time.Now()
	// HEADERS without END_HEADERS (":method: GET" only), and no CONTINUATION ever.
	if err := c.framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x83}}); err != nil {
		t.Fatal(err)
	}
	if !c.closed(10 * time.Second) {
		t.Fatal("the connection was still open after 10 s")
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("closed after %v, want after about 0.4 s", took)
	}
}

// A flood of streams opened and reset at once (HTTP/2 "rapid reset") reaches no upstream,
// and the gate goes on serving other clients. (The Rust gate closes such a connection; the
// Go gate takes all of it: both are fine.)
func TestARapidResetFloodReachesNoUpstream(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	_, address := startGate(t, up.target())
	c := dialRaw(t, address)
	for i := range 20000 {
		stream := uint32(2*i + 1)
		err := c.tryHeaders(stream, "/test.Echo/Echo", false)
		if err == nil {
			err = c.framer.WriteRSTStream(stream, http2.ErrCodeCancel)
		}
		if err != nil {
			break // the gate closed the connection
		}
	}
	c.closed(time.Second)
	if err := dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("another client's call after the flood: %v", err)
	}
	if n := up.count.Load(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want only the other client's", n)
	}
}
