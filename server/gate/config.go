package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// config is the gate's command line. `ziggurat serve --gate`
// passes its own limit options through with the same names, units and defaults, so one
// operator setting means the same thing whether or not the gate is in front.
type config struct {
	listen   string
	upstream string
	secret   string

	maxMessageBytes          int
	maxStreamsPerConnection  int
	maxStreamsPerAddress     int
	maxConnectionsPerAddress int

	firstMessageTimeout   time.Duration
	maxConnectionIdle     time.Duration
	maxConnectionAge      time.Duration
	maxConnectionAgeGrace time.Duration
	keepalive             time.Duration
	keepaliveTimeout      time.Duration
	handshakeTimeout      time.Duration
	shutdownTimeout       time.Duration

	tlsCert string
	tlsKey  string

	logLevel level
}

// minSecretLength: the secret is all that tells the Python server a call came through the
// gate (and so that its x-ziggurat-peer can be believed); a short one could be guessed.
const minSecretLength = 32

// seconds is a flag of seconds, fractions allowed, 0 or more (as `ziggurat serve` takes them).
type seconds struct{ d *time.Duration }

func (s seconds) String() string {
	if s.d == nil {
		return "0"
	}
	return strconv.FormatFloat(s.d.Seconds(), 'g', -1, 64)
}

// longest stands for any longer time (Python accepts "inf" too): about 30 years.
const longest = time.Duration(1e9) * time.Second

func (s seconds) Set(text string) error {
	value, err := strconv.ParseFloat(text, 64)
	if err != nil || !(value >= 0) { // NaN fails this too
		return errors.New("must be 0 or more seconds")
	}
	if value >= longest.Seconds() {
		*s.d = longest
	} else {
		*s.d = time.Duration(value * float64(time.Second))
	}
	return nil
}

// count is a flag of a whole number, 0 or more.
type count struct{ n *int }

func (c count) String() string {
	if c.n == nil {
		return "0"
	}
	return strconv.Itoa(*c.n)
}

func (c count) Set(text string) error {
	value, err := strconv.ParseInt(text, 10, 64)
	if errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(text, "-") {
		value, err = math.MaxInt32, nil // Python takes any size; past 2^31 nothing is capped anyway
	}
	if err != nil || value < 0 {
		return errors.New("must be a whole number, 0 or more")
	}
	*c.n = int(min(value, math.MaxInt32))
	return nil
}

// logLevel is the --log-level flag.
type logLevel struct{ l *level }

func (f logLevel) String() string {
	if f.l == nil {
		return "info"
	}
	return [...]string{"debug", "info", "warning", "error"}[*f.l]
}

func (f logLevel) Set(text string) error {
	value, ok := levelNames[text]
	if !ok {
		return errors.New("must be one of debug, info, warning, error")
	}
	*f.l = value
	return nil
}

// parseConfig reads the arguments and the secret from the environment; its error is one line
// for the operator (main prints it and exits 2).
func parseConfig(args []string, getenv func(string) string) (*config, error) {
	c := defaultConfig()
	fs := flagSet(c)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.listen == "":
		return nil, errors.New("--listen HOST:PORT is required")
	case c.upstream == "":
		return nil, errors.New("--upstream unix:/path is required")
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	c.secret = getenv("ZIGGURAT_GATE_SECRET")
	if len(c.secret) < minSecretLength {
		return nil, fmt.Errorf("ZIGGURAT_GATE_SECRET must be set to %d or more characters", minSecretLength)
	}
	return c, nil
}

// defaultConfig has the defaults of `ziggurat serve`.
func defaultConfig() *config {
	return &config{
		maxMessageBytes:          65536,
		maxStreamsPerConnection:  10000,
		maxStreamsPerAddress:     5000,
		maxConnectionsPerAddress: 500,
		firstMessageTimeout:      10 * time.Second,
		maxConnectionIdle:        60 * time.Second,
		maxConnectionAge:         3600 * time.Second,
		maxConnectionAgeGrace:    300 * time.Second,
		keepalive:                30 * time.Second,
		keepaliveTimeout:         10 * time.Second,
		handshakeTimeout:         20 * time.Second,
		shutdownTimeout:          10 * time.Second,
		logLevel:                 levelInfo,
	}
}

// flagSet binds the command line to c; it reports nothing itself (main prints one line).
func flagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("ziggurat-gate", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by the caller, in one line
	fs.StringVar(&c.listen, "listen", "", "public HOST:PORT to listen on (PORT 0 picks a free one)")
	fs.StringVar(&c.upstream, "upstream", "", "the Python server's private socket, unix:/path/upstream.sock")
	fs.Var(count{&c.maxMessageBytes}, "max-message-bytes", "largest request message accepted")
	fs.Var(count{&c.maxStreamsPerConnection}, "max-streams-per-connection", "calls open at once on one connection")
	fs.Var(count{&c.maxStreamsPerAddress}, "max-streams-per-address", "calls open at once from one IP (0 = no cap)")
	fs.Var(count{&c.maxConnectionsPerAddress}, "max-connections-per-address", "connections with calls from one IP (0 = no cap)")
	fs.Var(seconds{&c.firstMessageTimeout}, "first-message-timeout", "seconds a call may take to send its first message (0 = no limit)")
	fs.Var(seconds{&c.maxConnectionIdle}, "max-connection-idle", "close a connection without calls after this (0 = never)")
	fs.Var(seconds{&c.maxConnectionAge}, "max-connection-age", "ask every connection to go away after this (0 = never)")
	fs.Var(seconds{&c.maxConnectionAgeGrace}, "max-connection-age-grace", "then cut its calls still open after this")
	fs.Var(seconds{&c.keepalive}, "keepalive", "seconds between pings on a quiet connection")
	fs.Var(seconds{&c.keepaliveTimeout}, "keepalive-timeout", "a ping unanswered this long closes the connection")
	fs.Var(seconds{&c.handshakeTimeout}, "handshake-timeout", "a new connection must finish its HTTP/2 (and TLS) set-up within this")
	fs.Var(seconds{&c.shutdownTimeout}, "shutdown-timeout", "on SIGTERM, wait this long for forwarded calls to end")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM certificate chain (with --tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key (with --tls-cert)")
	fs.Var(logLevel{&c.logLevel}, "log-level", "debug, info, warning or error")
	return fs
}

// usage is printed for -h/--help.
func usage(out io.Writer) {
	fs := flagSet(defaultConfig())
	fmt.Fprintln(out, "usage: ziggurat-gate --listen HOST:PORT --upstream unix:/path/upstream.sock [options]")
	fmt.Fprintln(out, "environment: ZIGGURAT_GATE_SECRET (required, 32+ characters)")
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(out, "  --%s (default %q)\n      %s\n", f.Name, f.DefValue, f.Usage)
	})
}
