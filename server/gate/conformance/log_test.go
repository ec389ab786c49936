package conformance

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// A log line, in the Python server's format: the gate's standard error goes into the
// server's, which an operator reads as one log.
var logLine = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) ziggurat\.gate: \S.*$`)

// linesSaying are the lines of the log that contain word, each checked for the format.
func linesSaying(t *testing.T, log []string, word string) []string {
	t.Helper()
	var out []string
	for _, line := range log {
		if !logLine.MatchString(line) {
			t.Fatalf("log line %q, want \"YYYY-MM-DD HH:MM:SS,mmm LEVEL ziggurat.gate: message\"", line)
		}
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	return out
}

// saysCount tells whether line has n as a number of its own.
func saysCount(line string, n int) bool {
	return regexp.MustCompile(`\b` + strconv.Itoa(n) + `\b`).MatchString(line)
}

// refuse has the gate refuse n calls on conn for the address's streams cap (already full).
func refuse(t *testing.T, conn grpc.ClientConnInterface, n, most int) {
	t.Helper()
	for range n {
		err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame))
		wantRefusal(t, err, codes.ResourceExhausted, "TOO_MANY_STREAMS", tooManyStreamsMessage(most, most))
	}
}

func TestRefusalsAreLoggedOncePerReasonThenCountedAtExit(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	p, address := startGate(t, up.target(), "--max-streams-per-address", "3", "--first-message-timeout", "0.2")
	conn := dial(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	var silent []grpc.ClientStream
	for range 3 {
		silent = append(silent, open(t, ctx, conn, "/test.Echo/Echo"))
	}
	for _, stream := range silent {
		wantRefusal(t, recvErr(t, stream), codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT",
			"a stream must send its first message within 0.2 s")
	}
	for range 3 {
		openForwarded(t, ctx, conn, up)
	}
	refuse(t, conn, 5, 3)
	time.Sleep(200 * time.Millisecond) // the log lines of the last refusals
	log := p.stderrLines()
	for _, reason := range []string{"FIRST_MESSAGE_TIMEOUT", "TOO_MANY_STREAMS"} {
		if lines := linesSaying(t, log, reason); len(lines) != 1 || !strings.Contains(lines[0], " WARNING ") {
			t.Fatalf("%s: %q, want one WARNING line for the first refusal in 10 s", reason, lines)
		}
	}
	cancel()
	for range 3 {
		up.wantCancelled(t, "the client cancelled")
	}
	p.signal(t, syscall.SIGTERM)
	if code := p.exitCode(t, 5*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	// At exit, the count of the refusals not printed, per reason.
	log = p.stderrLines()
	for reason, rest := range map[string]int{"FIRST_MESSAGE_TIMEOUT": 2, "TOO_MANY_STREAMS": 4} {
		if lines := linesSaying(t, log, reason); len(lines) != 2 || !saysCount(lines[1], rest) {
			t.Fatalf("%s at exit: %q, want a second line with the %d refusals not printed", reason, lines, rest)
		}
	}
}

func TestARefusal10sAfterTheLastLoggedOneIsLoggedWithTheCountLeftOut(t *testing.T) {
	t.Parallel() // 10 s, beside the others
	up := startUpstream(t)
	p, address := startGate(t, up.target(), "--max-streams-per-address", "1")
	conn := dial(t, address)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	openForwarded(t, ctx, conn, up)
	first := time.Now()
	refuse(t, conn, 4, 1)
	time.Sleep(time.Until(first.Add(10*time.Second + 300*time.Millisecond)))
	refuse(t, conn, 1, 1)
	time.Sleep(200 * time.Millisecond)
	lines := linesSaying(t, p.stderrLines(), "TOO_MANY_STREAMS")
	if len(lines) != 2 || !saysCount(lines[1], 3) {
		t.Fatalf("%q, want a second line after 10 s with the 3 refusals not printed", lines)
	}
}

func TestTheLogLevelHidesLowerLines(t *testing.T) {
	t.Parallel()
	up := startUpstream(t)
	for _, c := range []struct {
		level  string
		hidden []string
		shown  []string
	}{
		{"warning", []string{" DEBUG ", " INFO "}, []string{"FIRST_MESSAGE_TIMEOUT"}},
		{"error", []string{" DEBUG ", " INFO ", " WARNING "}, nil},
	} {
		p, address := startGate(t, up.target(), "--log-level", c.level, "--first-message-timeout", "0.1")
		stream := open(t, context.Background(), dial(t, address), "/test.Echo/Echo")
		wantRefusal(t, recvErr(t, stream), codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT",
			"a stream must send its first message within 0.1 s")
		time.Sleep(100 * time.Millisecond)
		p.signal(t, syscall.SIGTERM)
		if code := p.exitCode(t, 5*time.Second); code != 0 {
			t.Fatalf("exit code %d, want 0", code)
		}
		log := p.stderrLines()
		for _, word := range c.hidden {
			if lines := linesSaying(t, log, word); len(lines) != 0 {
				t.Fatalf("--log-level %s: %q", c.level, lines)
			}
		}
		for _, word := range c.shown {
			if lines := linesSaying(t, log, word); len(lines) != 1 {
				t.Fatalf("--log-level %s: %q, want one line saying %s", c.level, log, word)
			}
		}
	}
}

// The log is one line per event whatever a client or the upstream puts in what it quotes (a
// line break could forge a line of the server's log), and never shows the secret.
func TestLogLinesStayOneLineAndNeverShowTheSecret(t *testing.T) {
	t.Parallel()
	forged := "\n2026-12-02 00:00:00,000 ERROR ziggurat.gate: forged"
	target := startStaticUpstream(t, func(_ any, stream grpc.ServerStream) error {
		_ = stream.RecvMsg(new(frame))
		return status.Error(codes.Internal, "the upstream says"+forged)
	})
	p, address := startGate(t, target, "--log-level", "debug", "--first-message-timeout", "0.1")
	conn := dial(t, address)
	if err := conn.Invoke(context.Background(), "/test.Echo/Echo", bytesFrame("x"), new(frame)); status.Code(err) != codes.Internal {
		t.Fatalf("got %v, want the upstream's INTERNAL", err)
	}
	// A path and metadata with line breaks, on raw HTTP/2 (whatever the gate does with them),
	// a silent call, and one that forges the gate's keys.
	c := dialRaw(t, address)
	_ = c.tryHeaders(1, "/test.Echo/Echo"+forged, false, "x-note", "a"+forged)
	_ = c.framer.WriteData(1, true, []byte{0, 0, 0, 0, 1, 'x'})
	c.closed(time.Second)
	silent := open(t, context.Background(), conn, "/test.Echo/Echo")
	wantRefusal(t, recvErr(t, silent), codes.DeadlineExceeded, "FIRST_MESSAGE_TIMEOUT",
		"a stream must send its first message within 0.1 s")
	ctx := metadata.AppendToOutgoingContext(context.Background(), secretKey, testSecret+forged[:1]+"x")
	_ = conn.Invoke(ctx, "/test.Echo/Echo", bytesFrame("x"), new(frame))
	time.Sleep(100 * time.Millisecond)
	p.signal(t, syscall.SIGTERM)
	if code := p.exitCode(t, 5*time.Second); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	log := p.stderrLines()
	linesSaying(t, log, "") // each line in the format
	for _, line := range log {
		if strings.Contains(line, "forged") && strings.HasPrefix(line, "2026-12-02 00:00:00,000") {
			t.Fatalf("a forged log line: %q", line)
		}
		if strings.Contains(line, testSecret) {
			t.Fatalf("the secret is in the log: %q", line)
		}
	}
}
