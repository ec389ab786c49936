package conformance

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every option of the README's table, as `ziggurat serve` passes them.
var options = []string{
	"--listen", "--upstream", "--max-message-bytes", "--max-streams-per-connection",
	"--max-streams-per-address", "--max-connections-per-address", "--first-message-timeout",
	"--max-connection-idle", "--max-connection-age", "--max-connection-age-grace", "--keepalive",
	"--keepalive-timeout", "--handshake-timeout", "--shutdown-timeout", "--tls-cert", "--tls-key", "--log-level",
	"--reuse-port", "--also-listen",
}

func TestHelpListsEveryOptionOnStdoutAndExits0(t *testing.T) {
	t.Parallel()
	p := startProcess(t, nil, "--help") // needs no secret
	var out []string
	for line := range p.lines {
		out = append(out, line)
	}
	if code := p.exitCode(t, 5*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	help := strings.Join(out, "\n")
	for _, option := range options {
		if !strings.Contains(help, option) {
			t.Errorf("--help does not list %s:\n%s", option, help)
		}
	}
	if stderr := p.stderr.String(); stderr != "" {
		t.Fatalf("--help wrote %q on stderr, want nothing", stderr)
	}
}

func TestTheReadyLineGivesTheBoundAddressAndIsAllOfStdout(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	// A port given is the port bound (taken free from the system just before).
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	_ = free.Close()
	p := startProcess(t, secretEnv(), "--listen", "127.0.0.1:"+strconv.Itoa(port), "--upstream", up.target())
	if address := p.ready(t, "127.0.0.1"); address != "127.0.0.1:"+strconv.Itoa(port) {
		t.Fatalf("ready line gives %s, want 127.0.0.1:%d", address, port)
	}
	// IPv6, in brackets.
	p6 := startProcess(t, secretEnv(), "--listen", "[::1]:0", "--upstream", up.target())
	address := p6.ready(t, "[::1]")
	if err := dial(t, address).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatalf("a call to the address of the ready line %s: %v", address, err)
	}
	for _, g := range []*process{p, p6} {
		g.signal(t, syscall.SIGTERM)
		if code := g.exitCode(t, 5*time.Second); code != 0 {
			t.Fatalf("exit code %d after SIGTERM, want 0", code)
		}
		if extra, ok := <-g.lines; ok {
			t.Fatalf("stdout after the ready line: %q", extra)
		}
	}
}

func TestBadArgumentsExitWith2AndOneLine(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Close() }) // after the subtests, which run in parallel
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--listen", "127.0.0.1:0", "--upstream", "unix:/nowhere.sock"}
	with := func(more ...string) []string { return append(append([]string{}, base...), more...) }
	for _, c := range []struct {
		name string
		env  []string
		args []string
		says []string // what the line must name, so that the operator knows what to fix
	}{
		{"unknown option", secretEnv(), with("--colour", "red"), []string{"colour"}},
		{"no --listen", secretEnv(), []string{"--upstream", "unix:/x.sock"}, []string{"--listen"}},
		{"no --upstream", secretEnv(), []string{"--listen", "127.0.0.1:0"}, []string{"--upstream"}},
		{"an option without its value", secretEnv(), with("--max-message-bytes"), []string{"max-message-bytes"}},
		{"negative seconds", secretEnv(), with("--first-message-timeout", "-1"), []string{"first-message-timeout", "-1"}},
		{"negative fraction of seconds", secretEnv(), with("--keepalive", "-0.5"), []string{"keepalive", "-0.5"}},
		{"nan seconds", secretEnv(), with("--keepalive", "nan"), []string{"keepalive", "nan"}},
		{"seconds not a number", secretEnv(), with("--shutdown-timeout", "soon"), []string{"shutdown-timeout", "soon"}},
		{"count not a number", secretEnv(), with("--max-streams-per-address", "many"), []string{"max-streams-per-address", "many"}},
		{"negative count", secretEnv(), with("--max-message-bytes", "-1"), []string{"max-message-bytes", "-1"}},
		{"fractional count", secretEnv(), with("--max-message-bytes", "1.5"), []string{"max-message-bytes", "1.5"}},
		{"bad log level", secretEnv(), with("--log-level", "loud"), []string{"log-level", "loud"}},
		{"stray argument", secretEnv(), with("extra"), []string{"extra"}},
		{"no secret", nil, base, []string{"ZIGGURAT_GATE_SECRET"}},
		{"secret of 31 characters", []string{"ZIGGURAT_GATE_SECRET=" + testSecret[:31]}, base, []string{"ZIGGURAT_GATE_SECRET"}},
		{"cert without key", secretEnv(), with("--tls-cert", missing), []string{"--tls-key"}},
		{"key without cert", secretEnv(), with("--tls-key", missing), []string{"--tls-cert"}},
		{"missing tls files", secretEnv(), with("--tls-cert", missing, "--tls-key", missing), []string{"tls"}},
		{"tls files that are not PEM of a key pair", secretEnv(), with("--tls-cert", garbage, "--tls-key", garbage), []string{"tls"}},
		{"port in use", secretEnv(), []string{"--listen", busy.Addr().String(), "--upstream", "unix:/x.sock"},
			[]string{busy.Addr().String()}},
		{"address without a port", secretEnv(), []string{"--listen", "127.0.0.1", "--upstream", "unix:/x.sock"},
			[]string{"127.0.0.1"}},
		{"address not of this host", secretEnv(), []string{"--listen", "192.0.2.1:0", "--upstream", "unix:/x.sock"},
			[]string{"192.0.2.1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := startProcess(t, c.env, c.args...)
			if code := p.exitCode(t, 5*time.Second); code != 2 {
				t.Fatalf("exit code %d, want 2", code)
			}
			stderr := p.stderr.String()
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") ||
				!strings.HasPrefix(stderr, "ziggurat-gate: error: ") {
				t.Fatalf("stderr %q, want one line \"ziggurat-gate: error: ...\"", stderr)
			}
			for _, word := range c.says {
				if !strings.Contains(strings.ToLower(stderr), strings.ToLower(word)) {
					t.Fatalf("stderr %q does not name %q", stderr, word)
				}
			}
			if out, ok := <-p.lines; ok {
				t.Fatalf("stdout %q, want nothing", out)
			}
		})
	}
}

// `ziggurat serve` passes its own values through: Python's "inf", counts past 2^31, seconds
// as decimals with fractions or exponents, 0 for "no cap" and "never".
func TestOptionsTakeTheValuesZigguratServePasses(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	for _, values := range [][]string{
		{"--max-message-bytes", "99999999999", "--max-streams-per-connection", "99999999999",
			"--max-streams-per-address", "99999999999", "--max-connections-per-address", "99999999999",
			"--first-message-timeout", "inf", "--max-connection-idle", "inf", "--max-connection-age", "inf",
			"--max-connection-age-grace", "inf", "--keepalive", "inf", "--keepalive-timeout", "inf",
			"--handshake-timeout", "inf", "--shutdown-timeout", "inf", "--log-level", "debug"},
		{"--max-streams-per-address", "0", "--max-connections-per-address", "0", "--first-message-timeout", "0",
			"--max-connection-idle", "0", "--max-connection-age", "0", "--max-connection-age-grace", "1e-05",
			"--keepalive-timeout", "7200.5", "--handshake-timeout", "0.25", "--log-level", "warning"},
	} {
		p, address := startGate(t, up.target(), values...)
		conn := dial(t, address)
		reply := new(frame)
		if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), reply); err != nil {
			t.Fatalf("%q: a call: %v", values, err)
		}
		// inf and 0 are "no limit" and "never", not "at once": a silent call stays held, a
		// connection without calls stays open, and so do old ones.
		held := openHeld(t, context.Background(), conn)
		idle := holdRaw(t, address, 0)
		time.Sleep(500 * time.Millisecond)
		select {
		case err := <-held.ended:
			t.Fatalf("%q: a silent call ended after 0.5 s: %v", values, err)
		default:
		}
		if !idle.alive() {
			t.Fatalf("%q: a connection without calls was closed or told to go away within 0.5 s", values)
		}
		p.signal(t, syscall.SIGTERM)
		if code := p.exitCode(t, 5*time.Second); code != 0 {
			t.Fatalf("%q: exit code %d after SIGTERM, want 0", values, code)
		}
	}
	// The secret may be exactly 32 characters.
	p := startProcess(t, []string{"ZIGGURAT_GATE_SECRET=" + testSecret[:32]}, "--listen", "127.0.0.1:0", "--upstream", up.target())
	p.ready(t, "127.0.0.1")
}

// alsoLine is the ready line of a gate given --also-listen: both bound addresses.
var alsoLine = regexp.MustCompile(`^ziggurat-gate listening on (.+:[0-9]+), also on (.+:[0-9]+)$`)

// Each worker of `ziggurat serve --workers --gate` runs a gate of its own: --reuse-port lets
// them all bind the one public port (the kernel spreads connections over them), and
// --also-listen serves the worker's own port, forwarding to the same upstream.
func TestGatesShareAPortWithReusePortAndServeASecondAddress(t *testing.T) {
	t.Parallel()
	first, second := startUpstream(t), startUpstream(t)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(free.Addr().(*net.TCPAddr).Port)
	_ = free.Close()
	public := "127.0.0.1:" + port
	g1 := startProcess(t, secretEnv(), "--listen", public, "--reuse-port", "--also-listen", "127.0.0.1:0",
		"--upstream", first.target())
	var own string
	select {
	case line := <-g1.lines:
		match := alsoLine.FindStringSubmatch(line)
		if match == nil || match[1] != public {
			t.Fatalf("ready line %q, want \"ziggurat-gate listening on %s, also on HOST:PORT\"", line, public)
		}
		own = match[2]
	case <-time.After(10 * time.Second):
		t.Fatal("no ready line within 10 s")
	}
	g2 := startProcess(t, secretEnv(), "--listen", public, "--reuse-port=true", "--upstream", second.target())
	if address := g2.ready(t, "127.0.0.1"); address != public {
		t.Fatalf("the second gate listens on %s, want the shared %s", address, public)
	}
	// Connections to the public port reach both gates (each new connection goes to one).
	for i := 0; i < 64 && (first.count.Load() == 0 || second.count.Load() == 0); i++ {
		if err := dial(t, public).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
			t.Fatalf("a call to the shared port: %v", err)
		}
	}
	if first.count.Load() == 0 || second.count.Load() == 0 {
		t.Fatalf("64 connections to the shared port: %d reached the first gate, %d the second, want both",
			first.count.Load(), second.count.Load())
	}
	// The own port reaches the first gate's upstream only.
	before := first.count.Load()
	if err := dial(t, own).Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("y"), new(frame)); err != nil {
		t.Fatalf("a call to the second address %s: %v", own, err)
	}
	if first.count.Load() != before+1 {
		t.Fatalf("a call to the second address reached the first upstream %d times, want once", first.count.Load()-before)
	}
	// Without --reuse-port the port is someone else's: one line, exit 2.
	third := startProcess(t, secretEnv(), "--listen", public, "--upstream", second.target())
	if code := third.exitCode(t, 5*time.Second); code != 2 || !strings.Contains(third.stderr.String(), "cannot listen on") {
		t.Fatalf("a third gate without --reuse-port: exit %d, %q; want 2 and \"cannot listen on\"", code, third.stderr.String())
	}
	for _, g := range []*process{g1, g2} {
		g.signal(t, syscall.SIGTERM)
		if code := g.exitCode(t, 5*time.Second); code != 0 {
			t.Fatalf("exit code %d after SIGTERM, want 0", code)
		}
	}
}
