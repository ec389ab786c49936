package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Go's runtime gives freed memory back to the OS only gradually (the scavenger); after a
// burst of thousands of connections and silent streams the gate would keep most of its peak
// RSS for minutes. The watcher calls debug.FreeOSMemory once a burst is over, with the rules
// of the Python server's trimmer (server/ziggurat/service/memory.py): when RSS has grown by
// memoryGrowth since the last return, or the open calls have fallen to half their peak (of
// at least burstCalls), and RSS then has not grown for memorySettle; at most once per
// memoryMinInterval, so a gate whose memory is really in use pays for it rarely.
//
// What it cannot return: the Go runtime never frees a goroutine's descriptor once allocated
// (golang/go#9869; reused by later goroutines), and gRPC-Go spends three goroutines on each
// connection and the gate two on each held call. Measured (the idle soak's shape, under the
// machine lock, load 1.3-2.9): 10,000 idle connections took the gate from 12.4 to 173.5 MB,
// 10,000 silent streams on top to 299.5 MB; once they were dropped this returned it to
// 52.5 MB in 74 ms, and a second equal burst (peak 310.9 MB) ended at 53.6 MB: about 40 MB
// stay for good after the first burst, the high-water mark of goroutines (~0.8 KB each).
const (
	memoryCheckEvery  = time.Second
	memorySettle      = 3 * time.Second
	memoryMinInterval = 10 * time.Second
	memoryGrowth      = 0.05
	burstCalls        = 200
)

// memoryWatch is the running watcher.
type memoryWatch struct {
	done chan struct{}
}

// trimRule is the decision, apart from the clock and /proc, so that it can be tested.
type trimRule struct {
	level, high  int64 // RSS after the last return, and the highest since
	highAt, last time.Time
	peakCalls    int64
}

// observe takes one sample and says whether to return memory now.
func (r *trimRule) observe(now time.Time, rss, calls int64) bool {
	r.peakCalls = max(r.peakCalls, calls)
	if rss > r.high {
		r.high, r.highAt = rss, now
	}
	grew := float64(r.high) >= float64(r.level)*(1+memoryGrowth)
	burstOver := r.peakCalls >= burstCalls && calls <= r.peakCalls/2
	if !(grew || burstOver) || now.Sub(r.highAt) < memorySettle || now.Sub(r.last) < memoryMinInterval {
		return false
	}
	return true
}

// returned resets the rule after a return of memory that left RSS at rss.
func (r *trimRule) returned(now time.Time, rss, calls int64) {
	r.level, r.high, r.highAt, r.last, r.peakCalls = rss, rss, now, now, calls
}

func startMemoryWatch(openCalls func() int64, log *logger) *memoryWatch {
	w := &memoryWatch{done: make(chan struct{})}
	rss := rssBytes()
	if rss == 0 { // no /proc: nothing to watch
		return w
	}
	now := time.Now()
	rule := &trimRule{level: rss, high: rss, highAt: now, last: now, peakCalls: openCalls()}
	go func() {
		ticker := time.NewTicker(memoryCheckEvery)
		defer ticker.Stop()
		for {
			select {
			case <-w.done:
				return
			case now := <-ticker.C:
				calls := openCalls()
				before := rssBytes()
				if !rule.observe(now, before, calls) {
					continue
				}
				started := time.Now()
				debug.FreeOSMemory()
				after := rssBytes()
				rule.returned(time.Now(), after, calls)
				log.debugf("returned memory to the OS: RSS %.1f -> %.1f MB in %d ms (%d calls open)",
					float64(before)/(1<<20), float64(after)/(1<<20), time.Since(started).Milliseconds(), calls)
			}
		}
	}()
	return w
}

func (w *memoryWatch) stop() {
	close(w.done)
}

// rssBytes is this process's resident set size (0 where /proc is not there).
func rssBytes() int64 {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(statm))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
