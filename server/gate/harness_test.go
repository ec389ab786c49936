package main

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// The tests drive the real gate: a gRPC server on a loopback port in front of a small
// gRPC-Go upstream on a Unix socket in t.TempDir(), with raw-bytes methods, so no generated
// ziggurat code is needed. Clients are real gRPC-Go channels.

const testSecret = "0123456789abcdef0123456789abcdef-test"

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
	socket  string
	server  *grpc.Server
	calls   chan seenCall
	ended   chan error
	release chan struct{}
	count   atomic.Int64
}

func startUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{
		socket:  filepath.Join(t.TempDir(), "upstream.sock"),
		calls:   make(chan seenCall, 100),
		ended:   make(chan error, 100),
		release: make(chan struct{}),
	}
	listener, err := net.Listen("unix", u.socket)
	if err != nil {
		t.Fatal(err)
	}
	u.server = grpc.NewServer(grpc.UnknownServiceHandler(u.handle), grpc.ForceServerCodecV2(rawCodec{}))
	go func() { _ = u.server.Serve(listener) }()
	t.Cleanup(u.server.Stop)
	return u
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
			return refusal(codes.Unavailable, reasonShuttingDown, "the upstream ended this stream")
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

// startGate runs a gate in this process on 127.0.0.1:0 in front of upstream.
func startGate(t *testing.T, upstream string, tune func(*config)) (*gate, string) {
	t.Helper()
	cfg, err := parseConfig([]string{"--listen", "127.0.0.1:0", "--upstream", upstream},
		func(string) string { return testSecret })
	if err != nil {
		t.Fatal(err)
	}
	if tune != nil {
		tune(cfg)
	}
	logs := &testLog{t: t}
	t.Cleanup(logs.stop) // runs last: the gate may log while it stops
	g, err := newGate(cfg, newLogger(logs, levelDebug))
	if err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.serve(listener) }()
	t.Cleanup(func() {
		g.server.Stop()
		g.upstream.close()
	})
	return g, listener.Addr().String()
}

// testLog sends the gate's log lines to the test's log (shown when a test fails).
type testLog struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(p[:len(p)-1]))
	}
	return len(p), nil
}

func (w *testLog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
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
	conn, err := grpc.NewClient(address, options...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	d.ClientConn = conn
	return d
}

// bytesFrame is a message with these bytes.
func bytesFrame(text string) *frame {
	return &frame{data: mem.BufferSlice{mem.SliceBuffer([]byte(text))}}
}

func frameText(f *frame) string {
	return string(f.data.Materialize())
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

// wantRefusal checks err is the status code and ErrorInfo reason (domain ziggurat) given, with message.
func wantRefusal(t *testing.T, err error, code codes.Code, reason, message string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code || st.Message() != message {
		t.Fatalf("got %v %q, want %v %q", st.Code(), st.Message(), code, message)
	}
	details := st.Details()
	if len(details) != 1 {
		t.Fatalf("got details %v, want one ErrorInfo", details)
	}
	info, ok := details[0].(*errdetails.ErrorInfo)
	if !ok || info.Reason != reason || info.Domain != "ziggurat" || len(info.Metadata) != 0 {
		t.Fatalf("got detail %v, want ErrorInfo{Reason: %s, Domain: ziggurat}", details[0], reason)
	}
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

func resolveTCP(address string) (*net.TCPAddr, error) {
	return net.ResolveTCPAddr("tcp", address)
}
