// Command ziggurat-gate is the native front of `ziggurat serve --gate`: it holds the public
// port, terminates HTTP/2 (and TLS), enforces the connection-level limits and the
// first-message deadline, and forwards only calls that have sent their first message to the
// Python server over its private Unix socket. Junk traffic (idle connections, silent
// streams) so never reaches the Python process, whose single event loop and memory it would
// otherwise cost (issue 13's idle soak; docs/operations.md, "The gate", says how to run it).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes: 0 after a clean stop, 1 when stopped at once by a second signal or when
// serving failed, 2 for anything wrong at start-up (arguments, TLS files, the port).
const (
	exitClean   = 0
	exitFailed  = 1
	exitStartup = 2
)

func main() {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr, signals))
}

// run is the whole program, with its outside world passed in.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer, signals <-chan os.Signal) int {
	cfg, err := parseConfig(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout)
		return exitClean
	}
	if err != nil {
		fmt.Fprintf(stderr, "ziggurat-gate: error: %v\n", err)
		return exitStartup
	}
	log := newLogger(stderr, cfg.logLevel)
	g, err := newGate(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "ziggurat-gate: error: %v\n", err)
		return exitStartup
	}
	listener, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		g.upstream.close()
		fmt.Fprintf(stderr, "ziggurat-gate: error: cannot listen on %s: %v\n", cfg.listen, err)
		return exitStartup
	}
	// The ready line: `ziggurat serve` waits for it and reports this address as its own.
	fmt.Fprintf(stdout, "ziggurat-gate listening on %s\n", listener.Addr())
	log.infof("listening on %s, forwarding to %s", listener.Addr(), cfg.upstream)

	memory := startMemoryWatch(g.open.Load, log)
	defer memory.stop()

	served := make(chan error, 1)
	go func() { served <- g.serve(listener) }()
	select {
	case err := <-served:
		log.errorf("stopped serving: %v", err)
		return exitFailed
	case sig := <-signals:
		log.infof("%v: refusing new calls, letting forwarded ones end (at most %v)", sig, cfg.shutdownTimeout)
	}
	stopped := make(chan int64, 1)
	go func() { stopped <- g.stop(cfg.shutdownTimeout) }()
	select {
	case cut := <-stopped:
		if cut > 0 {
			log.warningf("cut %d forwarded calls still open after %v with %s", cut, cfg.shutdownTimeout, reasonShuttingDown)
		}
		log.flush()
		log.infof("stopped")
		return exitClean
	case sig := <-signals:
		log.flush()
		log.warningf("%v again: stopping at once", sig)
		return exitFailed
	}
}
