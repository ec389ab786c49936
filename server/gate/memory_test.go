package main

import (
	"testing"
	"time"
)

func TestMemoryIsReturnedAfterABurstHasSettled(t *testing.T) {
	start := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	const mb = 1 << 20
	rule := &trimRule{level: 20 * mb, high: 20 * mb, highAt: start, last: start}

	if rule.observe(at(11), 20*mb, 10) {
		t.Fatal("returned memory with no burst")
	}
	// A burst: 1,000 calls, RSS up to 80 MB.
	rule.observe(at(12), 80*mb, 1000)
	if rule.observe(at(13), 80*mb, 1000) {
		t.Fatal("returned memory while RSS was still growing (not settled)")
	}
	if !rule.observe(at(15), 80*mb, 400) {
		t.Fatal("did not return memory 3 s after RSS stopped growing")
	}
	rule.returned(at(15), 30*mb, 400)
	// Calls fall to half their peak again soon, but at most once per 10 s.
	if rule.observe(at(20), 30*mb, 100) {
		t.Fatal("returned memory twice within 10 s")
	}
	if !rule.observe(at(26), 30*mb, 100) {
		t.Fatal("did not return memory after the calls fell to half their peak (of >= 200)")
	}
	rule.returned(at(26), 30*mb, 100)
	// Few calls and no growth: nothing to do.
	if rule.observe(at(60), 30*mb, 80) {
		t.Fatal("returned memory with nothing to return")
	}
}

func TestRSSIsRead(t *testing.T) {
	if rssBytes() <= 0 {
		t.Fatal("no RSS from /proc/self/statm")
	}
}
