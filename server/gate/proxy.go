package main

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
)

// Metadata the gate adds to every forwarded call. The Python server believes
// x-ziggurat-peer only when x-ziggurat-gate carries its secret; the gate drops every key that
// starts with either (x-ziggurat-peer-bin too, whatever reads it one day) from what clients
// send, so a client cannot forge them.
const (
	peerKey   = "x-ziggurat-peer"
	secretKey = "x-ziggurat-gate"
)

// anyStream is how the gate opens every upstream call: as a bidirectional stream. Unary and
// server-streaming methods are the same bytes on the wire (one request message, then the
// half-close), so one shape serves every method without knowing which it is.
var anyStream = &grpc.StreamDesc{StreamName: "gate", ServerStreams: true, ClientStreams: true}

// handle is the gate's one handler (grpc.UnknownServiceHandler): every call to any method.
func (g *gate) handle(_ any, stream grpc.ServerStream) error {
	ctx := stream.Context()
	method, ok := grpc.MethodFromServerStream(stream)
	if !ok {
		return status.Error(codes.Internal, "no method name")
	}
	client := "unknown"
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		client = peerName(p.Addr)
	}
	if g.isStopping() {
		g.log.refusal(reasonShuttingDown, "refused a call from %s: %s", addressOf(client), reasonShuttingDown)
		return shuttingDown()
	}
	if md, _ := metadata.FromIncomingContext(ctx); metadataBytes(md) > maxMetadataBytes {
		return metadataTooLarge(metadataBytes(md)) // before it is held, as the Python server would
	}
	t, reason, err := g.admission.admit(client)
	if err != nil {
		g.log.refusal(reason, "refused a call from %s: %s", addressOf(client), reason)
		return err
	}
	g.open.Add(1)
	defer func() {
		g.open.Add(-1)
		g.admission.release(t)
	}()

	first, err := g.awaitFirst(ctx, stream, client)
	if err != nil {
		return err
	}
	if g.isStopping() { // the first message and SIGTERM came together
		if first != nil {
			first.free()
		}
		return shuttingDown()
	}
	return g.forward(ctx, stream, method, client, first)
}

// firstResult is the client's first RecvMsg: a message, io.EOF (half-closed before sending
// one) or an error.
type firstResult struct {
	msg *frame
	err error
}

// awaitFirst holds the call until the client's first request message arrives, at most
// --first-message-timeout. Only then is anything opened upstream: a silent stream (the junk
// the gate is there for) costs the Python process nothing, and one the client drops while
// held never reaches it. It returns the message, or nil if the client half-closed first.
func (g *gate) awaitFirst(ctx context.Context, stream grpc.ServerStream, client string) (*frame, error) {
	got := make(chan firstResult, 1) // buffered: the reader never waits for a handler that left
	go func() {
		msg := new(frame)
		err := stream.RecvMsg(msg)
		got <- firstResult{msg, err}
	}()
	var late <-chan time.Time
	if g.cfg.firstMessageTimeout > 0 {
		timer := time.NewTimer(g.cfg.firstMessageTimeout)
		defer timer.Stop()
		late = timer.C
	}
	select {
	case r := <-got:
		if r.err == io.EOF {
			return nil, nil
		}
		if r.err != nil {
			return nil, r.err
		}
		return r.msg, nil
	case <-late:
		g.log.refusal(reasonFirstMessageTimeout, "closed a stream from %s: %s", addressOf(client), reasonFirstMessageTimeout)
		return nil, firstMessageLate(g.cfg.firstMessageTimeout)
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	case <-g.stopping:
		return nil, shuttingDown()
	}
}

// forward opens the upstream call and relays it until the upstream's final status, which
// goes back to the client unchanged (code, message, details, trailers). This goroutine
// does all the sending to the client (headers, messages, trailers); a second one relays the
// client's messages upstream. The upstream call's context is the client call's, so the
// client's deadline and cancellation reach the Python server, and the gate's forced stop
// (the end of --shutdown-timeout) cancels it too.
func (g *gate) forward(ctx context.Context, stream grpc.ServerStream, method, client string, first *frame) error {
	upCtx, cancel := context.WithCancel(metadata.NewOutgoingContext(ctx, g.outgoing(ctx, client)))
	defer cancel()
	stopForced := context.AfterFunc(g.forced, cancel)
	defer stopForced()

	g.forwarded.Add(1)
	defer g.forwarded.Add(-1)
	up, err := g.upstream.next().NewStream(upCtx, anyStream, method)
	if err != nil {
		if first != nil {
			first.free()
		}
		return g.upstreamEnded(ctx, err, nil)
	}

	var requestErr atomic.Pointer[error] // why the client's side failed, if it did
	if first == nil {
		_ = up.CloseSend()
	} else if err := up.SendMsg(first); err != nil {
		first.free()
		if err != io.EOF { // io.EOF: upstream already ended; RecvMsg below has its status
			return err
		}
	} else {
		go relayRequests(stream, up, cancel, &requestErr)
	}

	header, _ := up.Header() // nil when the upstream sent no headers (trailers-only)
	if header != nil {
		if err := stream.SendHeader(header); err != nil {
			return err // the client is gone
		}
	}
	for {
		msg := new(frame)
		if err := up.RecvMsg(msg); err != nil {
			trailer := up.Trailer()
			delete(trailer, "grpc-status-details-bin") // the status below carries the details
			stream.SetTrailer(trailer)
			if err == io.EOF {
				return nil
			}
			if p := requestErr.Load(); p != nil {
				return *p
			}
			return g.upstreamEnded(ctx, err, up)
		}
		if err := stream.SendMsg(msg); err != nil {
			msg.free()
			return err // the client is gone
		}
	}
}

// relayRequests sends the client's messages after the first one upstream, and the
// half-close after the last. If the client's side fails (it went away, or sent a message over
// --max-message-bytes) it records why and cancels the upstream call.
func relayRequests(stream grpc.ServerStream, up grpc.ClientStream, cancel context.CancelFunc, failed *atomic.Pointer[error]) {
	for {
		msg := new(frame)
		err := stream.RecvMsg(msg)
		if err == io.EOF {
			_ = up.CloseSend()
			return
		}
		if err != nil {
			failed.Store(&err)
			cancel()
			return
		}
		if err := up.SendMsg(msg); err != nil {
			msg.free()
			return // the upstream call ended; the forwarding side returns its status
		}
	}
}

// upstreamEnded is the status a failed upstream call ends the client's call with: the
// upstream's own, unchanged, unless the gate's forced stop cut it (then the gate's
// SERVER_SHUTTING_DOWN, like every other stream at shutdown). A call that could not be
// opened at all (up == nil) gets a plain UNAVAILABLE: gRPC's own message would show the
// client the private socket's path; the log has it.
func (g *gate) upstreamEnded(ctx context.Context, err error, up grpc.ClientStream) error {
	if g.forced.Err() != nil && ctx.Err() == nil {
		return shuttingDown()
	}
	if up == nil && status.Code(err) == codes.Unavailable {
		g.log.refusal("UPSTREAM_UNREACHABLE", "could not open a call to the server: %v", err)
		return status.Error(codes.Unavailable, "the server cannot be reached; retry later")
	}
	return err
}

// outgoing is the metadata sent upstream: the client's, less the keys only the gate may set
// and those gRPC sets itself, plus the client's address and the gate's secret.
func (g *gate) outgoing(ctx context.Context, client string) metadata.MD {
	in, _ := metadata.FromIncomingContext(ctx)
	out := make(metadata.MD, len(in)+2)
	for key, values := range in {
		if strings.HasPrefix(key, peerKey) || strings.HasPrefix(key, secretKey) || strings.HasPrefix(key, ":") ||
			strings.HasPrefix(key, "grpc-") || hopHeaders[key] {
			continue
		}
		out[key] = values
	}
	out[peerKey] = []string{client}
	out[secretKey] = []string{g.cfg.secret}
	return out
}

// hopHeaders belong to one HTTP/2 connection or are set by gRPC on each hop, not forwarded.
var hopHeaders = map[string]bool{
	"content-type": true, "user-agent": true, "te": true, "host": true, "connection": true,
}
