package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func newTestLogger(min level) (*logger, *bytes.Buffer, *fakeClock) {
	out := &bytes.Buffer{}
	clock := &fakeClock{now: time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)}
	l := newLogger(out, min)
	l.now = clock.Now
	return l, out, clock
}

func lines(out *bytes.Buffer) []string {
	text := strings.TrimSuffix(out.String(), "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

func TestLinesHaveThePythonServersFormat(t *testing.T) {
	l, out, _ := newTestLogger(levelInfo)
	l.infof("listening on %s", "127.0.0.1:1")
	l.warningf("a client said %q", "two\nlines")
	want := []string{
		"2026-12-01 23:00:00,000 INFO ziggurat.gate: listening on 127.0.0.1:1",
		`2026-12-01 23:00:00,000 WARNING ziggurat.gate: a client said "two\nlines"`,
	}
	if got := lines(out); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestTheLogLevelHidesLowerLines(t *testing.T) {
	l, out, _ := newTestLogger(levelWarning)
	l.debugf("debug")
	l.infof("info")
	l.warningf("warning")
	l.errorf("error")
	if got := lines(out); len(got) != 2 || !strings.HasSuffix(got[0], "WARNING ziggurat.gate: warning") ||
		!strings.HasSuffix(got[1], "ERROR ziggurat.gate: error") {
		t.Fatalf("got %q", got)
	}
}

func TestRefusalsPrintOneLinePerReasonPerTenSeconds(t *testing.T) {
	l, out, clock := newTestLogger(levelInfo)
	for range 3 {
		l.refusal("TOO_MANY_STREAMS", "refused a call from %s: TOO_MANY_STREAMS", "ipv4:10.0.0.1")
	}
	l.refusal("FIRST_MESSAGE_TIMEOUT", "closed a stream from %s: FIRST_MESSAGE_TIMEOUT", "ipv4:10.0.0.2")
	clock.now = clock.now.Add(9 * time.Second)
	l.refusal("TOO_MANY_STREAMS", "refused a call from %s: TOO_MANY_STREAMS", "ipv4:10.0.0.1")
	if got := len(lines(out)); got != 2 {
		t.Fatalf("%d lines in the first 10 s, want one per reason: %q", got, lines(out))
	}
	clock.now = clock.now.Add(time.Second)
	l.refusal("TOO_MANY_STREAMS", "refused a call from %s: TOO_MANY_STREAMS", "ipv4:10.0.0.3")
	got := lines(out)
	if len(got) != 3 || !strings.HasSuffix(got[2],
		"refused a call from ipv4:10.0.0.3: TOO_MANY_STREAMS [and 3 more like this before, not printed]") {
		t.Fatalf("got %q", got)
	}
	l.refusal("TOO_MANY_STREAMS", "refused a call from %s: TOO_MANY_STREAMS", "ipv4:10.0.0.3")
	l.flush()
	got = lines(out)
	if len(got) != 4 || !strings.HasSuffix(got[3], "1 more refusals (TOO_MANY_STREAMS) were not printed") {
		t.Fatalf("after flush: %q", got)
	}
}
