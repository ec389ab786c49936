package conformance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The tests drive the gate binary as `ziggurat serve --gate` does: a child process with its
// secret in the environment, its options on the command line, its ready line on standard
// output and its log on standard error, in front of a small gRPC-Go upstream on a Unix socket
// in t.TempDir() with raw-bytes methods (no generated ziggurat code). Clients are real gRPC-Go
// channels, or raw HTTP/2 peers (rawh2_test.go) for what no gRPC library would send.

// binary is the gate under test: ZIGGURAT_GATE_BINARY, an absolute path.
var binary string

func TestMain(m *testing.M) {
	binary = os.Getenv("ZIGGURAT_GATE_BINARY")
	if !filepath.IsAbs(binary) {
		fmt.Fprintf(os.Stderr, "conformance: ZIGGURAT_GATE_BINARY=%q: set it to the absolute path of the ziggurat-gate to test\n", binary)
		os.Exit(2)
	}
	if info, err := os.Stat(binary); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		fmt.Fprintf(os.Stderr, "conformance: ZIGGURAT_GATE_BINARY=%s is not an executable file\n", binary)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

const testSecret = "0123456789abcdef0123456789abcdef-test"

// The keys the gate adds to every forwarded call, and the only ones of its prefixes that may
// reach the upstream.
const (
	peerKey   = "x-ziggurat-peer"
	secretKey = "x-ziggurat-gate"
)

// Refusal messages, those of the Python server's guard (server/ziggurat/api/guard.py).
const shuttingDownMessage = "the server is shutting down; reconnect and resume after it restarts"

func tooManyStreamsMessage(open, most int) string {
	return fmt.Sprintf("this address has %d calls open, the most the server allows (%d); close some first", open, most)
}

func tooManyConnectionsMessage(inUse, most int) string {
	return fmt.Sprintf("this address has %d connections in use, the most the server allows (%d); share a channel", inUse, most)
}

// frame is one message as raw bytes: the tests never need its type.
type frame struct{ data []byte }

// rawCodec sends and receives frames as they are.
type rawCodec struct{}

func (rawCodec) Name() string { return "ziggurat-raw" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*frame).data)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*frame).data = data.Materialize()
	return nil
}

func bytesFrame(text string) *frame { return &frame{data: []byte(text)} }

func frameText(f *frame) string { return string(f.data) }

// seenCall is what the upstream saw of one call when it arrived.
type seenCall struct {
	method   string
	md       metadata.MD
	deadline time.Time // zero when the call had none
}

// fakeUpstream stands in for the Python server. Its methods:
//
//	/test.Echo/Echo   headers {x-up-header: h}, echoes every message, then OK with trailer {x-up-trailer: t}
//	/test.Echo/Fail   reads one message, then FAILED_PRECONDITION with an ErrorInfo and trailer {x-up-trailer: t}
//	/test.Echo/Hang   reads one message, sends headers, waits for the call to end; its context error goes to ended
//	/test.Echo/Stop   reads one message, sends headers, waits for release, then UNAVAILABLE SERVER_SHUTTING_DOWN
//	                  (as the Python server ends its streams at shutdown; its own message tells it from the gate's)
type fakeUpstream struct {
	socket      string
	server      *grpc.Server
	calls       chan seenCall
	ended       chan error
	release     chan struct{}
	count       atomic.Int64 // calls seen
	connections atomic.Int64 // connections accepted on the socket
}

func startUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{
		socket:  filepath.Join(t.TempDir(), "upstream.sock"),
		calls:   make(chan seenCall, 10000),
		ended:   make(chan error, 10000),
		release: make(chan struct{}),
	}
	listener, err := net.Listen("unix", u.socket)
	if err != nil {
		t.Fatal(err)
	}
	u.server = grpc.NewServer(grpc.UnknownServiceHandler(u.handle), grpc.ForceServerCodecV2(rawCodec{}))
	go func() { _ = u.server.Serve(countingListener{listener, &u.connections}) }()
	t.Cleanup(u.server.Stop)
	return u
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return conn, err
}

func (u *fakeUpstream) target() string { return "unix:" + u.socket }

func (u *fakeUpstream) handle(_ any, stream grpc.ServerStream) error {
	ctx := stream.Context()
	method, _ := grpc.MethodFromServerStream(stream)
	md, _ := metadata.FromIncomingContext(ctx)
	deadline, _ := ctx.Deadline()
	u.count.Add(1)
	u.calls <- seenCall{method: method, md: md.Copy(), deadline: deadline}
	switch method {
	case "/test.Echo/Echo":
		if err := stream.SendHeader(metadata.Pairs("x-up-header", "h")); err != nil {
			return err
		}
		for {
			msg := new(frame)
			err := stream.RecvMsg(msg)
			if err == io.EOF {
				stream.SetTrailer(metadata.Pairs("x-up-trailer", "t"))
				return nil
			}
			if err != nil {
				return err
			}
			if err := stream.SendMsg(msg); err != nil {
				return err
			}
		}
	case "/test.Echo/Fail":
		if err := stream.RecvMsg(new(frame)); err != nil {
			return err
		}
		stream.SetTrailer(metadata.Pairs("x-up-trailer", "t"))
		st, _ := status.New(codes.FailedPrecondition, "it is not your turn").WithDetails(
			&errdetails.ErrorInfo{Reason: "NOT_YOUR_TURN", Domain: "ziggurat", Metadata: map[string]string{"seat": "2"}})
		return st.Err()
	case "/test.Echo/Hang":
		if err := stream.RecvMsg(new(frame)); err != nil {
			return err
		}
		if err := stream.SendHeader(metadata.Pairs("x-up-header", "h")); err != nil {
			return err
		}
		<-ctx.Done()
		u.ended <- ctx.Err()
		return ctx.Err()
	case "/test.Echo/Stop":
		if err := stream.RecvMsg(new(frame)); err != nil {
			return err
		}
		if err := stream.SendHeader(metadata.Pairs("x-up-header", "h")); err != nil {
			return err
		}
		select {
		case <-u.release:
			st, _ := status.New(codes.Unavailable, "the upstream ended this stream").WithDetails(
				&errdetails.ErrorInfo{Reason: "SERVER_SHUTTING_DOWN", Domain: "ziggurat"})
			return st.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return status.Errorf(codes.Unimplemented, "no method %s", method)
}

// nextCall is the next call the upstream saw (fails after a few seconds without one).
func (u *fakeUpstream) nextCall(t *testing.T) seenCall {
	t.Helper()
	select {
	case call := <-u.calls:
		return call
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream saw no call")
		return seenCall{}
	}
}

// wantEnded waits for the upstream's next Hang call to end, and checks it was cancelled.
func (u *fakeUpstream) wantCancelled(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-u.ended:
		if err != context.Canceled {
			t.Fatalf("%s: the upstream's call ended with %v, want it cancelled", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the upstream's call went on", what)
	}
}

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

// process is a running gate.
type process struct {
	cmd    *exec.Cmd
	lines  chan string // stdout, line by line
	stderr *lockedBuffer
	exited chan struct{}
	err    error
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startProcess runs the gate with args and only the environment env (nothing inherited).
func startProcess(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	return startCommand(t, exec.Command(binary, args...), env, args)
}

// startCommand runs cmd (the gate, or a shell that execs it) as startProcess does; args are
// the gate's, for the log of a failed test.
func startCommand(t *testing.T, cmd *exec.Cmd, env []string, args []string) *process {
	t.Helper()
	p := &process{cmd: cmd, lines: make(chan string, 100), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			p.lines <- scanner.Text()
		}
		close(p.lines)
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("gate %q stderr:\n%s", args, p.stderr.String())
		}
	})
	return p
}

func secretEnv() []string { return []string{"ZIGGURAT_GATE_SECRET=" + testSecret} }

// startGate runs the gate on 127.0.0.1:0 in front of upstream, with more options, and
// returns it and the address of its ready line.
func startGate(t *testing.T, upstream string, options ...string) (*process, string) {
	t.Helper()
	p := startProcess(t, secretEnv(), append([]string{"--listen", "127.0.0.1:0", "--upstream", upstream}, options...)...)
	return p, p.ready(t, "127.0.0.1")
}

var readyLine = regexp.MustCompile(`^ziggurat-gate listening on (.+):([0-9]+)$`)

// ready waits for the ready line, checks it names host (any host when "") and a port, and
// returns host:port.
func (p *process) ready(t *testing.T, host string) string {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("the gate exited before its ready line: %s", p.stderr.String())
		}
		match := readyLine.FindStringSubmatch(line)
		if match == nil || (host != "" && match[1] != host) || match[2] == "0" {
			t.Fatalf("ready line %q, want \"ziggurat-gate listening on %s:PORT\" with the bound port", line, host)
		}
		return net.JoinHostPort(strings.Trim(match[1], "[]"), match[2])
	case <-time.After(10 * time.Second):
		t.Fatal("no ready line within 10 s")
		return ""
	}
}

// signal sends sig to the gate.
func (p *process) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// exitCode waits (at most within) for the process to end and returns its exit code.
func (p *process) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("the gate did not exit within %v", within)
	}
	var exit *exec.ExitError
	if errors.As(p.err, &exit) {
		if exit.ExitCode() < 0 {
			t.Fatalf("the gate was ended by a signal: %v", exit)
		}
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// stderrLines is what the gate wrote on standard error so far, line by line.
func (p *process) stderrLines() []string {
	text := strings.TrimSuffix(p.stderr.String(), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// dialed is a client channel to the gate that knows the local address of its connection.
type dialed struct {
	*grpc.ClientConn
	local atomic.Pointer[net.Addr]
}

func dial(t *testing.T, address string, options ...grpc.DialOption) *dialed {
	t.Helper()
	d := &dialed{}
	options = append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.CallContentSubtype("proto")),
		grpc.WithContextDialer(func(ctx context.Context, target string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
			if err == nil {
				local := conn.LocalAddr()
				d.local.Store(&local)
			}
			return conn, err
		}),
	}, options...)
	conn, err := grpc.NewClient("passthrough:///"+address, options...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	d.ClientConn = conn
	return d
}

// dialStatic is a client with the smallest windows HTTP/2 allows: one that wants the gate to
// hold what it does not read.
func dialStatic(t *testing.T, address string) *dialed {
	return dial(t, address, grpc.WithStaticStreamWindowSize(64<<10), grpc.WithStaticConnWindowSize(64<<10))
}

var anyMethod = &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

// open starts a call of method on conn.
func open(t *testing.T, ctx context.Context, conn grpc.ClientConnInterface, method string) grpc.ClientStream {
	t.Helper()
	stream, err := conn.NewStream(ctx, anyMethod, method)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// openForwarded starts a call of /test.Echo/Hang, sends its first message and waits for the
// upstream's headers: the call is forwarded and stays open until ctx ends.
func openForwarded(t *testing.T, ctx context.Context, conn grpc.ClientConnInterface, up *fakeUpstream) grpc.ClientStream {
	t.Helper()
	stream := open(t, ctx, conn, "/test.Echo/Hang")
	if err := stream.SendMsg(bytesFrame("x")); err != nil {
		t.Fatal(err)
	}
	if !forwarded(stream) {
		t.Fatalf("a call that sent its first message was not forwarded: %v", stream.RecvMsg(new(frame)))
	}
	up.nextCall(t)
	return stream
}

// forwarded waits for the upstream's headers of a /test.Echo/Hang call: false if the call
// ended without them (the gate refused it).
func forwarded(stream grpc.ClientStream) bool {
	header, _ := stream.Header() // nil when the call ended without headers
	return equal(header.Get("x-up-header"), []string{"h"})
}

// recvErr is the error the next RecvMsg ends with (a message is a test failure).
func recvErr(t *testing.T, stream grpc.ClientStream) error {
	t.Helper()
	msg := new(frame)
	err := stream.RecvMsg(msg)
	if err == nil {
		t.Fatalf("got a message %q, expected the call to end", frameText(msg))
	}
	return err
}

// isRefusal tells whether err is the status code and ErrorInfo reason (domain ziggurat, no
// metadata) given, with message; if not, what it is instead.
func isRefusal(err error, code codes.Code, reason, message string) (bool, string) {
	st := status.Convert(err)
	if st.Code() != code || st.Message() != message {
		return false, fmt.Sprintf("got %v %q, want %v %q", st.Code(), st.Message(), code, message)
	}
	details := st.Details()
	if len(details) != 1 {
		return false, fmt.Sprintf("got details %v, want one ErrorInfo", details)
	}
	info, ok := details[0].(*errdetails.ErrorInfo)
	if !ok || info.Reason != reason || info.Domain != "ziggurat" || len(info.Metadata) != 0 {
		return false, fmt.Sprintf("got detail %v, want ErrorInfo{Reason: %s, Domain: ziggurat}", details[0], reason)
	}
	return true, ""
}

// wantRefusal checks err is the status code and ErrorInfo reason (domain ziggurat) given, with message.
func wantRefusal(t *testing.T, err error, code codes.Code, reason, message string) {
	t.Helper()
	if ok, why := isRefusal(err, code, reason, message); !ok {
		t.Fatal(why)
	}
}

// held is a call that sent no message, so that the gate holds it, and what ended it.
type held struct {
	ctx    context.Context
	conn   grpc.ClientConnInterface
	stream grpc.ClientStream
	ended  chan error
}

func openHeld(t *testing.T, ctx context.Context, conn grpc.ClientConnInterface) *held {
	t.Helper()
	h := &held{ctx: ctx, conn: conn}
	h.open(t)
	return h
}

func (h *held) open(t *testing.T) {
	t.Helper()
	stream := open(t, h.ctx, h.conn, "/test.Echo/Echo")
	ended := make(chan error, 1)
	go func() { ended <- stream.RecvMsg(new(frame)) }()
	h.stream, h.ended = stream, ended
}

// refill opens the call again if the gate refused it: a call made after it may have been
// counted in first, and taken the last place.
func (h *held) refill(t *testing.T) {
	t.Helper()
	select {
	case <-h.ended:
		if h.ctx.Err() == nil {
			h.open(t)
		}
	default:
	}
}

// end is what ended the call (fails if it goes on for 10 s).
func (h *held) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.ended:
		if err == nil {
			t.Fatal("a held call got a message")
		}
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("a held call went on for 10 s")
		return nil
	}
}

// refiller keeps calls held: refill opens again those the gate refused.
type refiller interface{ refill(t *testing.T) }

// refusedSoon calls /test.Echo/Echo on conn, again while it goes through, until the gate
// refuses it, and checks the refusal: the way to know that the held calls are in the gate's
// books. A call is counted in a moment after its client sent it, not at once: a call made
// after a held one may be counted first and go through, and the held one refused; those are
// opened again. Returns how many went through (each reached the upstream).
func refusedSoon(t *testing.T, conn grpc.ClientConnInterface, code codes.Code, reason, message string, holding ...refiller) int {
	t.Helper()
	through := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("probe"), new(frame))
		if err == nil {
			through++
			for _, h := range holding {
				h.refill(t)
			}
			continue
		}
		wantRefusal(t, err, code, reason, message)
		return through
	}
	t.Fatalf("%d calls went through in 5 s, want the gate to refuse with %s", through, reason)
	return through
}

// wantNoCallsCounted checks that the gate counts no call from 127.0.0.1 as open, when it
// was started with --max-streams-per-address most: most calls are forwarded at once, and the
// next is refused with TOO_MANY_STREAMS saying most are open. A call left counted after it
// ended would have one of them refused (for 5 s: calls that just ended may take a moment to
// be counted out).
func wantNoCallsCounted(t *testing.T, up *fakeUpstream, address string, most int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := dial(t, address)
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < most; {
		stream := open(t, ctx, conn, "/test.Echo/Hang")
		if err := stream.SendMsg(bytesFrame("x")); err != nil {
			t.Fatal(err)
		}
		if forwarded(stream) {
			<-up.calls
			i++
			continue
		}
		err := stream.RecvMsg(new(frame))
		if time.Now().After(deadline) {
			t.Fatalf("call %d of %d (--max-streams-per-address %d) was refused: %v: the gate still counts "+
				"calls that ended", i+1, most, most, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame))
	wantRefusal(t, err, codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(most, most))
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func isTimeout(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}
