// Command idle_load applies the load of benchmarks/idle_soak.py to a ziggurat server: round
// after round until -seconds have passed, it opens -connections idle connections (gRPC
// channels that connect and make no call) and -streams silent ziggurat.v1.MatchService/Play
// streams (opened, never a first message) spread over -stream-channels connections, holds them
// -hold seconds, cancels every stream and closes every connection. At the end it prints one JSON
// object on stdout: the rounds run, how the silent streams ended, the connections that were not
// ready within -connect-timeout, and the CPU seconds and peak RSS this process used.
//
// Why Go: the same load from Python client processes took most of a 2-core machine, so the
// soak's latency figures mixed the loaders' cost into the server's. Nothing here is generated
// code: a silent stream never sends a message, so the method's name and a raw-bytes codec are
// all a call needs.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const playMethod = "/ziggurat.v1.MatchService/Play"

// rawCodec passes message bytes through untouched: the loader only needs to know whether a
// message arrived, never what it says.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: cannot marshal %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "raw" }

// config is one run's load, the same names and meanings as idle_soak.py's options.
type config struct {
	address        string
	connections    int
	streams        int
	streamChannels int
	hold           time.Duration
	duration       time.Duration
	connectTimeout time.Duration
}

// report is what the loader prints at the end, read by idle_soak.py.
type report struct {
	Rounds int `json:"rounds"`
	// Ended counts how the silent streams ended, in idle_soak.py's words: "dropped by the
	// client" (this loader's cancel at the end of the hold), "answered" (the server sent a
	// message), or the gRPC status name the server ended the stream with.
	Ended map[string]int `json:"ended"`
	// NotReady counts connections (idle and stream carriers) not ready within -connect-timeout.
	// Examples holds the first error message seen for each outcome other than the client's drop.
	Examples        map[string]string `json:"examples"`
	NotReady        int               `json:"not_ready"`
	ConnectSecMax   float64           `json:"connect_seconds_max"`
	ConnectSecTotal float64           `json:"connect_seconds_total"`
	CPUSeconds      float64           `json:"cpu_seconds"`
	MaxRSSKiB       int64             `json:"max_rss_kib"`
}

// codeNames spells gRPC codes as Python's grpc.StatusCode names, so both loaders report alike.
var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
	codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
	codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
	codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
	codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
	codes.Unauthenticated: "UNAUTHENTICATED",
}

func codeName(c codes.Code) string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return c.String()
}

// dial makes one client connection of its own (grpc-go never shares a ClientConn's transport
// with another ClientConn, so N dials are N TCP connections). Small buffers: the loader's own
// memory at 10,000 connections is not what is measured.
func dial(address string) (*grpc.ClientConn, error) {
	return grpc.NewClient(
		"passthrough:///"+address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithReadBufferSize(4096),
		grpc.WithWriteBufferSize(4096),
		grpc.WithSharedWriteBuffer(true),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})),
	)
}

// waitReady connects conn and waits until it is ready or ctx ends; false if not ready.
func waitReady(ctx context.Context, conn *grpc.ClientConn) bool {
	conn.Connect()
	for {
		state := conn.GetState()
		if state == connectivity.Ready {
			return true
		}
		if state == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, state) {
			return false
		}
	}
}

// silentStream opens a Play stream on conn that never sends a message and waits for the first
// thing the server does with it; the outcome in idle_soak.py's words.
func silentStream(ctx context.Context, conn *grpc.ClientConn) (string, error) {
	desc := &grpc.StreamDesc{StreamName: "Play", ServerStreams: true, ClientStreams: true}
	stream, err := conn.NewStream(ctx, desc, playMethod)
	if err == nil {
		var message []byte
		err = stream.RecvMsg(&message)
		if err == nil {
			return "answered", nil
		}
	}
	code := status.Code(err)
	if code == codes.Canceled && ctx.Err() != nil {
		return "dropped by the client", nil
	}
	return codeName(code), err
}

// oneRound opens, holds and drops one round's load, adding to rep.
func oneRound(cfg config, rep *report) {
	all := make([]*grpc.ClientConn, 0, cfg.connections+cfg.streamChannels)
	for range cfg.connections + cfg.streamChannels {
		conn, err := dial(cfg.address)
		if err != nil { // only for a malformed target: the same for every round
			fmt.Fprintln(os.Stderr, "idle_load:", err)
			os.Exit(2)
		}
		all = append(all, conn)
	}
	carriers := all[cfg.connections:]

	began := time.Now()
	readyCtx, readyCancel := context.WithTimeout(context.Background(), cfg.connectTimeout)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, conn := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !waitReady(readyCtx, conn) {
				mu.Lock()
				rep.NotReady++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	readyCancel()
	connect := time.Since(began).Seconds()
	rep.ConnectSecTotal += connect
	rep.ConnectSecMax = max(rep.ConnectSecMax, connect)

	if len(carriers) > 0 {
		holdCtx, drop := context.WithCancel(context.Background())
		type outcome struct {
			how string
			err error
		}
		ended := make(chan outcome, cfg.streams)
		for i := range cfg.streams {
			conn := carriers[i%len(carriers)]
			go func() {
				how, err := silentStream(holdCtx, conn)
				ended <- outcome{how, err}
			}()
		}
		time.Sleep(cfg.hold)
		drop()
		for range cfg.streams {
			got := <-ended
			rep.Ended[got.how]++
			if _, seen := rep.Examples[got.how]; got.err != nil && !seen {
				rep.Examples[got.how] = got.err.Error()
			}
		}
	}
	for _, conn := range all {
		_ = conn.Close()
	}
}

func usage() (cpu float64, maxRSS int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	seconds := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return seconds(ru.Utime) + seconds(ru.Stime), ru.Maxrss
}

func main() {
	var cfg config
	var hold, seconds, connectTimeout float64
	flag.StringVar(&cfg.address, "address", "", "the server's HOST:PORT (required)")
	flag.IntVar(&cfg.connections, "connections", 10_000, "idle connections per round")
	flag.IntVar(&cfg.streams, "streams", 10_000, "silent Play streams per round")
	flag.IntVar(&cfg.streamChannels, "stream-channels", 20, "connections carrying the streams")
	flag.Float64Var(&hold, "hold", 5, "seconds each round holds its load")
	flag.Float64Var(&seconds, "seconds", 300, "start rounds until this many seconds have passed")
	flag.Float64Var(&connectTimeout, "connect-timeout", 30, "seconds a round waits for its connections")
	flag.Parse()
	if cfg.address == "" || flag.NArg() > 0 || cfg.connections < 0 || cfg.streams < 0 ||
		cfg.streamChannels < 1 || hold < 0 || seconds < 0 || connectTimeout <= 0 {
		fmt.Fprintln(os.Stderr, "idle_load: -address is required; counts >= 0, -stream-channels >= 1, times >= 0")
		os.Exit(2)
	}
	cfg.hold = time.Duration(hold * float64(time.Second))
	cfg.duration = time.Duration(seconds * float64(time.Second))
	cfg.connectTimeout = time.Duration(connectTimeout * float64(time.Second))

	rep := report{Ended: map[string]int{}, Examples: map[string]string{}}
	stopAt := time.Now().Add(cfg.duration)
	for time.Now().Before(stopAt) {
		oneRound(cfg, &rep)
		rep.Rounds++
	}
	rep.CPUSeconds, rep.MaxRSSKiB = usage()
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, "idle_load:", err)
		os.Exit(1)
	}
}
