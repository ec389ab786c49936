package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // clients may compress, as the Python server allows
	"google.golang.org/grpc/keepalive"
)

// gate is the running front: the public gRPC server, the upstream pool, and the state that
// admission and shutdown share.
type gate struct {
	cfg       *config
	log       *logger
	server    *grpc.Server
	upstream  *upstreamPool
	admission *admission

	open      atomic.Int64 // calls in the gate: held for their first message, or forwarded
	forwarded atomic.Int64 // calls opened upstream and not yet ended

	stopping chan struct{} // closed at SIGTERM: new calls are refused, held ones too
	stopOnce sync.Once
	forced   context.Context // cancelled at the end of --shutdown-timeout: forwarded calls are cut
	force    context.CancelFunc
}

// Per-connection buffers. gRPC's default is 32 KiB each way per connection: 640 MB at the
// 10,000 idle connections the soak holds. Reads are not buffered at all (gRPC then reads
// each frame from the socket, a syscall or two for a game's small messages): a 4 KiB
// buffer made an idle connection cost 21 KB instead of 16 KB (4,000 idle connections:
// RSS +85 MB against +66 MB, load 2.4-2.9). The write buffer is shared: taken while a
// connection writes, then given back.
const (
	connReadBuffer  = 0
	connWriteBuffer = 16 << 10
)

// Flow-control windows, fixed (gRPC-Go grows them by its BDP estimate otherwise, up to 16 MiB a
// stream). A stream's window is how much the gate takes in before it is read: a client that
// sends faster than the Python server reads, or that never reads what the server streams to
// it, would otherwise have the gate buffer megabytes per stream, thousands of streams each.
// 64 KiB is the smallest HTTP/2 allows and plenty for game messages; a connection's window
// is given back as data arrives, so it bounds bytes in flight on the wire, not memory.
const (
	streamWindow = 64 << 10
	connWindow   = 1 << 20
)

// pingPolicyMinTime: clients may ping this often even without calls (as the Python server's
// grpc.http2.min_ping_interval_without_data_ms allows); more often closes the connection.
const pingPolicyMinTime = 10 * time.Second

// upstreamConns is the size of the pool of HTTP/2 connections to the Python server: one
// would serialize every call's frames on one socket and one connection's stream limit;
// one per client would bring the connections back into Python that the gate is there to keep out.
const upstreamConns = 4

// newGate builds the gate from its configuration; a TLS file it cannot read or an upstream
// target it cannot parse is a start-up error (exit 2).
func newGate(cfg *config, log *logger) (*gate, error) {
	pool, err := newUpstreamPool(cfg.upstream, upstreamConns)
	if err != nil {
		return nil, err
	}
	g := &gate{
		cfg:       cfg,
		log:       log,
		upstream:  pool,
		admission: newAdmission(cfg.maxStreamsPerAddress, cfg.maxConnectionsPerAddress),
		stopping:  make(chan struct{}),
	}
	g.forced, g.force = context.WithCancel(context.Background())
	options := []grpc.ServerOption{
		grpc.UnknownServiceHandler(g.handle),
		grpc.ForceServerCodecV2(rawCodec{}),
		grpc.MaxRecvMsgSize(cfg.maxMessageBytes),
		grpc.MaxConcurrentStreams(uint32(cfg.maxStreamsPerConnection)),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionIdle:     cfg.maxConnectionIdle, // 0: never (gRPC's own default)
			MaxConnectionAge:      cfg.maxConnectionAge,  // 0: never
			MaxConnectionAgeGrace: atLeastMillisecond(cfg.maxConnectionAgeGrace),
			Time:                  atLeastMillisecond(cfg.keepalive),
			Timeout:               atLeastMillisecond(cfg.keepaliveTimeout),
		}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: pingPolicyMinTime, PermitWithoutStream: true}),
		grpc.ConnectionTimeout(atLeastMillisecond(cfg.handshakeTimeout)),
		grpc.ReadBufferSize(connReadBuffer),
		grpc.WriteBufferSize(connWriteBuffer),
		grpc.SharedWriteBuffer(true),
		grpc.StaticStreamWindowSize(streamWindow),
		grpc.StaticConnWindowSize(connWindow),
		grpc.MaxHeaderListSize(maxHeaderListBytes), // metadatacap.go
	}
	if cfg.tlsCert != "" {
		certificate, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
		if err != nil {
			pool.close()
			return nil, fmt.Errorf("cannot use --tls-cert/--tls-key: %v", err)
		}
		options = append(options, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{certificate},
			MinVersion:   tls.VersionTLS12,
		})))
	}
	g.server = grpc.NewServer(options...)
	return g, nil
}

// atLeastMillisecond keeps a 0 from meaning gRPC-Go's "default" (hours) where the Python
// server, whose options these are, takes 0 as its smallest setting (1 ms).
func atLeastMillisecond(d time.Duration) time.Duration {
	return max(d, time.Millisecond)
}

func (g *gate) isStopping() bool {
	select {
	case <-g.stopping:
		return true
	default:
		return false
	}
}

// serve serves the public port until stop has run.
func (g *gate) serve(listener net.Listener) error {
	return g.server.Serve(listener)
}

// stop is the SIGTERM behaviour: keep the port and answer new calls (and calls still held for
// their first message) with UNAVAILABLE SERVER_SHUTTING_DOWN; let the forwarded calls end
// with the upstream's status (the Python server, told at the same time, ends its streams
// with SERVER_SHUTTING_DOWN itself); after timeout cut the ones left with the same status.
// Returns how many were cut.
func (g *gate) stop(timeout time.Duration) int64 {
	g.stopOnce.Do(func() { close(g.stopping) })
	deadline := time.Now().Add(timeout)
	for g.forwarded.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cut := g.forwarded.Load()
	g.force()
	// Held calls saw stopping and forwarded ones had their upstream cancelled: their handlers
	// return at once, except one blocked sending to a client that does not read what it was
	// sent (flow control), which only closing its connection ends. Give the statuses a moment
	// to be written; then close the connections gracefully if every handler is done, at once
	// if not (a client that never reads would otherwise hold the exit up, past the time the
	// Python server gives the gate before it kills it).
	for end := time.Now().Add(stopFlushWait); g.open.Load() > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if g.open.Load() > 0 {
		g.server.Stop()
	} else {
		done := make(chan struct{})
		go func() {
			g.server.GracefulStop()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(stopFlushWait):
			g.server.Stop()
		}
	}
	g.upstream.close()
	return cut
}

// stopFlushWait is how long stop waits, after the forwarded calls are cut, for their
// statuses to be written before it closes the connections.
const stopFlushWait = 500 * time.Millisecond

// upstreamPool is a few shared connections to the Python server's private socket, used in
// turn. Message sizes are unlimited there: the public side already enforced
// --max-message-bytes, and the upstream's answers are the server's own.
type upstreamPool struct {
	conns []*grpc.ClientConn
	turn  atomic.Uint32
}

func newUpstreamPool(target string, size int) (*upstreamPool, error) {
	pool := &upstreamPool{}
	for range size {
		conn, err := grpc.NewClient(target,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithUserAgent("ziggurat-gate"),
			// Fixed windows (see streamWindow): what the server streams to a client that does
			// not read waits in the server, not by the megabyte in the gate.
			grpc.WithStaticStreamWindowSize(streamWindow),
			grpc.WithStaticConnWindowSize(connWindow),
			grpc.WithDefaultCallOptions(
				grpc.ForceCodecV2(rawCodec{}),
				grpc.CallContentSubtype("proto"),
				grpc.MaxCallRecvMsgSize(math.MaxInt32),
				grpc.MaxCallSendMsgSize(math.MaxInt32),
			),
		)
		if err != nil {
			pool.close()
			return nil, fmt.Errorf("bad --upstream %q: %v", target, err)
		}
		conn.Connect() // be connected before the first call needs it
		pool.conns = append(pool.conns, conn)
	}
	return pool, nil
}

func (p *upstreamPool) next() *grpc.ClientConn {
	return p.conns[int(p.turn.Add(1))%len(p.conns)]
}

func (p *upstreamPool) close() {
	for _, conn := range p.conns {
		_ = conn.Close()
	}
}
