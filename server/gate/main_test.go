package main

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
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// binary is the gate built once for the tests that run it as a process (TestMain).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ziggurat-gate-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "ziggurat-gate")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// process is a running ziggurat-gate.
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

// startProcess runs the gate binary with args and environment env (nothing inherited).
func startProcess(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(binary, args...), lines: make(chan string, 100), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	p.cmd.Env = env
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
			t.Logf("gate stderr:\n%s", p.stderr.String())
		}
	})
	return p
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
		return exit.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

var readyLine = regexp.MustCompile(`^ziggurat-gate listening on 127\.0\.0\.1:([0-9]+)$`)

// ready waits for the ready line and returns the address it gives.
func (p *process) ready(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			t.Fatalf("the gate exited before its ready line: %s", p.stderr.String())
		}
		match := readyLine.FindStringSubmatch(line)
		if match == nil {
			t.Fatalf("ready line %q", line)
		}
		return "127.0.0.1:" + match[1]
	case <-time.After(10 * time.Second):
		t.Fatal("no ready line")
		return ""
	}
}

func secretEnv() []string { return []string{"ZIGGURAT_GATE_SECRET=" + testSecret} }

func TestTheGateProcessStopsCleanlyOnSIGTERM(t *testing.T) {
	up := startUpstream(t)
	p := startProcess(t, secretEnv(), "--listen", "127.0.0.1:0", "--upstream", up.target(),
		"--shutdown-timeout", "0.7", "--first-message-timeout", "30")
	address := p.ready(t)
	conn := dial(t, address)
	ctx := context.Background()
	if err := conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame)); err != nil {
		t.Fatal(err)
	}
	up.nextCall(t)
	endsByItself := open(t, ctx, conn, "/test.Echo/Stop") // the upstream ends it at shutdown
	cutByGate := open(t, ctx, conn, "/test.Echo/Hang")    // never ends by itself
	for _, s := range []interface{ SendMsg(any) error }{endsByItself, cutByGate} {
		if err := s.SendMsg(bytesFrame("x")); err != nil {
			t.Fatal(err)
		}
		up.nextCall(t)
	}
	held := open(t, ctx, conn, "/test.Echo/Echo") // no first message
	time.Sleep(100 * time.Millisecond)            // let the gate take the held call in

	stopped := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	const down = "the server is shutting down; reconnect and resume after it restarts"
	wantRefusal(t, recvErr(t, held), codes.Unavailable, "SERVER_SHUTTING_DOWN", down)
	// The port stays open and new calls, on old connections or new ones, are refused.
	for _, c := range []*dialed{conn, dial(t, address)} {
		err := c.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame))
		wantRefusal(t, err, codes.Unavailable, "SERVER_SHUTTING_DOWN", down)
	}
	close(up.release)
	wantRefusal(t, recvErr(t, endsByItself), codes.Unavailable, "SERVER_SHUTTING_DOWN", "the upstream ended this stream")
	wantRefusal(t, recvErr(t, cutByGate), codes.Unavailable, "SERVER_SHUTTING_DOWN", down)
	if took := time.Since(stopped); took < 600*time.Millisecond {
		t.Fatalf("the forwarded call was cut after %v, before --shutdown-timeout", took)
	}
	select {
	case err := <-up.ended:
		if err != context.Canceled {
			t.Fatalf("the cut call ended upstream with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cut call was not cancelled upstream")
	}
	if code := p.exitCode(t, 5*time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	if extra, ok := <-p.lines; ok {
		t.Fatalf("stdout after the ready line: %q", extra)
	}
}

func TestAnIdleGateExitsAtOnceOnSIGINT(t *testing.T) {
	up := startUpstream(t)
	p := startProcess(t, secretEnv(), "--listen", "127.0.0.1:0", "--upstream", up.target())
	p.ready(t)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, 3*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
}

func TestASecondSignalStopsTheGateAtOnce(t *testing.T) {
	up := startUpstream(t)
	p := startProcess(t, secretEnv(), "--listen", "127.0.0.1:0", "--upstream", up.target(), "--shutdown-timeout", "60")
	conn := dial(t, p.ready(t))
	hang := open(t, context.Background(), conn, "/test.Echo/Hang")
	if err := hang.SendMsg(bytesFrame("x")); err != nil {
		t.Fatal(err)
	}
	up.nextCall(t)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gate to refuse new calls", func() bool {
		err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame))
		return status.Code(err) == codes.Unavailable
	})
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t, 3*time.Second); code != 1 {
		t.Fatalf("exit code %d after a second signal, want 1", code)
	}
}

func TestBadArgumentsExitWith2AndOneLine(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	missing := filepath.Join(t.TempDir(), "missing.pem")
	base := []string{"--listen", "127.0.0.1:0", "--upstream", "unix:/nowhere.sock"}
	for _, c := range []struct {
		name string
		env  []string
		args []string
		says string
	}{
		{"unknown flag", secretEnv(), append(base, "--colour", "red"), "flag provided but not defined"},
		{"no listen", secretEnv(), []string{"--upstream", "unix:/x.sock"}, "--listen"},
		{"no upstream", secretEnv(), []string{"--listen", "127.0.0.1:0"}, "--upstream"},
		{"negative seconds", secretEnv(), append(base, "--first-message-timeout", "-1"), "0 or more seconds"},
		{"not a number", secretEnv(), append(base, "--max-streams-per-address", "many"), "whole number"},
		{"bad log level", secretEnv(), append(base, "--log-level", "loud"), "debug, info, warning, error"},
		{"stray argument", secretEnv(), append(base, "extra"), "unexpected argument"},
		{"no secret", nil, base, "ZIGGURAT_GATE_SECRET"},
		{"short secret", []string{"ZIGGURAT_GATE_SECRET=short"}, base, "ZIGGURAT_GATE_SECRET"},
		{"cert without key", secretEnv(), append(base, "--tls-cert", missing), "go together"},
		{"unreadable tls", secretEnv(), append(base, "--tls-cert", missing, "--tls-key", missing), "--tls-cert"},
		{"port in use", secretEnv(), []string{"--listen", busy.Addr().String(), "--upstream", "unix:/x.sock"}, "cannot listen"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startProcess(t, c.env, c.args...)
			if code := p.exitCode(t, 5*time.Second); code != 2 {
				t.Fatalf("exit code %d, want 2", code)
			}
			stderr := p.stderr.String()
			if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "ziggurat-gate: error: ") ||
				!strings.Contains(stderr, c.says) {
				t.Fatalf("stderr %q, want one error line saying %q", stderr, c.says)
			}
			if out, ok := <-p.lines; ok {
				t.Fatalf("stdout %q, want nothing", out)
			}
		})
	}
}

func TestHelpGoesToStdout(t *testing.T) {
	p := startProcess(t, nil, "--help")
	var out []string
	for line := range p.lines {
		out = append(out, line)
	}
	if code := p.exitCode(t, 5*time.Second); code != 0 || !strings.Contains(strings.Join(out, "\n"), "--first-message-timeout") {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
}

var _ = io.EOF
