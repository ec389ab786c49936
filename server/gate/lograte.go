package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// level is a log line's severity; the names are those of `ziggurat serve --log-level`.
type level int

const (
	levelDebug level = iota
	levelInfo
	levelWarning
	levelError
)

var levelNames = map[string]level{"debug": levelDebug, "info": levelInfo, "warning": levelWarning, "error": levelError}

func (l level) String() string {
	return [...]string{"DEBUG", "INFO", "WARNING", "ERROR"}[l]
}

// refusalWindow: a refusal reason prints at most one line per window. A client that opens
// thousands of silent streams would otherwise write a line for each of them.
const refusalWindow = 10 * time.Second

// logger writes one line per event to stderr, in the Python server's format
// ("2006-01-02 15:04:05,000 LEVEL ziggurat.gate: message"), so that an operator reading the
// server's log (the gate's stderr is the server's) sees one log, not two styles.
type logger struct {
	mu      sync.Mutex
	out     io.Writer
	min     level
	now     func() time.Time
	reasons map[string]*reasonLines
}

// reasonLines counts the lines of one refusal reason left out in the current window.
type reasonLines struct {
	printed time.Time
	held    int
}

func newLogger(out io.Writer, min level) *logger {
	return &logger{out: out, min: min, now: time.Now, reasons: map[string]*reasonLines{}}
}

func (l *logger) enabled(lv level) bool { return lv >= l.min }

func (l *logger) logf(lv level, format string, args ...any) {
	if !l.enabled(lv) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write(lv, fmt.Sprintf(format, args...))
}

// write prints one line; a message never spans lines (a client-supplied string could
// otherwise forge log lines). Callers hold l.mu.
func (l *logger) write(lv level, message string) {
	message = strings.ReplaceAll(message, "\n", `\n`)
	stamp := l.now().Format("2006-01-02 15:04:05.000")
	stamp = strings.Replace(stamp, ".", ",", 1)
	fmt.Fprintf(l.out, "%s %s ziggurat.gate: %s\n", stamp, lv, message)
}

func (l *logger) debugf(format string, args ...any)   { l.logf(levelDebug, format, args...) }
func (l *logger) infof(format string, args ...any)    { l.logf(levelInfo, format, args...) }
func (l *logger) warningf(format string, args ...any) { l.logf(levelWarning, format, args...) }
func (l *logger) errorf(format string, args ...any)   { l.logf(levelError, format, args...) }

// refusal logs a refused or closed call as a warning, at most one line per reason per
// refusalWindow; the first line after a quiet window says how many were left out.
func (l *logger) refusal(reason string, format string, args ...any) {
	if !l.enabled(levelWarning) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	kind := l.reasons[reason]
	if kind == nil {
		kind = &reasonLines{}
		l.reasons[reason] = kind
	} else if now.Sub(kind.printed) < refusalWindow {
		kind.held++
		return
	}
	message := fmt.Sprintf(format, args...)
	if kind.held > 0 {
		message += fmt.Sprintf(" [and %d more like this before, not printed]", kind.held)
	}
	kind.printed, kind.held = now, 0
	l.write(levelWarning, message)
}

// flush prints, one line per reason, the refusals still held back (at exit).
func (l *logger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for reason, kind := range l.reasons {
		if kind.held > 0 {
			l.write(levelWarning, fmt.Sprintf("%d more refusals (%s) were not printed", kind.held, reason))
			kind.held = 0
		}
	}
}
