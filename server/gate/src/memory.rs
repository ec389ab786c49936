//! Memory given back after a burst. glibc's malloc keeps freed memory in its arenas; after a
//! burst of thousands of connections and silent streams the gate would keep most of its peak
//! RSS. The watcher calls `malloc_trim(0)` once a burst is over, with the rules of the Python
//! server's trimmer (server/ziggurat/hosting/memory.py): when RSS has grown by [`GROWTH`]
//! since the last return, or the load (open calls and connections: an idle connection costs
//! the gate more than a held call) has fallen to half its peak (of at least [`BURST_LOAD`]),
//! and then neither RSS has grown nor the load moved for [`SETTLE`]; at most once per
//! [`MIN_INTERVAL`], so a gate whose memory is really in use pays for it rarely. Two
//! refinements for bursts that come and go in rounds (the idle soak): the load must have
//! stopped moving, so that the trim comes once a burst's connections have all closed, not
//! half-way (which would put the real one off by the interval); and a trim that gave back
//! less than [`WORTH`] (the burst was still held: nothing was free) does not count towards
//! the interval.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::log::Logger;

pub const CHECK_EVERY: Duration = Duration::from_secs(1);
pub const SETTLE: Duration = Duration::from_secs(3);
pub const MIN_INTERVAL: Duration = Duration::from_secs(10);
pub const GROWTH: f64 = 0.05;
pub const BURST_LOAD: i64 = 200;
pub const WORTH: u64 = 1 << 20;

/// The decision, apart from the clock and /proc, so that it can be tested.
pub struct TrimRule {
    level: u64,
    high: u64,
    high_at: Instant,
    last: Instant,
    peak_load: i64,
    load: i64,
    load_moved_at: Instant,
}

impl TrimRule {
    pub fn new(now: Instant, rss: u64, load: i64) -> TrimRule {
        TrimRule { level: rss, high: rss, high_at: now, last: now, peak_load: load, load, load_moved_at: now }
    }

    /// Takes one sample and says whether to return memory now.
    pub fn observe(&mut self, now: Instant, rss: u64, load: i64) -> bool {
        self.peak_load = self.peak_load.max(load);
        if rss > self.high {
            self.high = rss;
            self.high_at = now;
        }
        // Moved: by more than a twentieth of the peak (a few calls coming and going is not
        // a burst's connections closing).
        if (load - self.load).abs() > (self.peak_load / 20).max(1) {
            self.load = load;
            self.load_moved_at = now;
        }
        let grew = self.high as f64 >= self.level as f64 * (1.0 + GROWTH);
        let burst_over = self.peak_load >= BURST_LOAD && load <= self.peak_load / 2;
        (grew || burst_over)
            && now.duration_since(self.high_at) >= SETTLE
            && now.duration_since(self.load_moved_at) >= SETTLE
            && now.duration_since(self.last) >= MIN_INTERVAL
    }

    /// Resets the rule after a return of memory that took RSS from `before` to `rss`.
    pub fn returned(&mut self, now: Instant, before: u64, rss: u64, load: i64) {
        let last = if before.saturating_sub(rss) < WORTH { self.last } else { now };
        *self = TrimRule::new(now, rss, load);
        self.last = last;
    }
}

/// This process's resident set size (0 where /proc is not there).
pub fn rss_bytes() -> u64 {
    let Ok(statm) = std::fs::read_to_string("/proc/self/statm") else { return 0 };
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page.max(0) as u64
}

/// Gives freed heap memory back to the OS.
pub fn give_back() {
    // SAFETY: malloc_trim only walks glibc's own arenas.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Watches RSS and the load (open calls and connections) once a second for as long as the
/// process runs.
pub async fn watch(open: Arc<AtomicI64>, connections: Arc<AtomicI64>, log: Arc<Logger>) {
    let rss = rss_bytes();
    if rss == 0 {
        return; // no /proc: nothing to watch
    }
    let load = || open.load(Ordering::Relaxed) + connections.load(Ordering::Relaxed);
    let mut rule = TrimRule::new(Instant::now(), rss, load());
    let mut ticker = tokio::time::interval(CHECK_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let calls = open.load(Ordering::Relaxed);
        let before = rss_bytes();
        if !rule.observe(Instant::now(), before, load()) {
            continue;
        }
        let started = Instant::now();
        // On a thread of its own: trimming a few hundred MB takes tens of milliseconds, and
        // the serving loop goes on meanwhile (glibc locks one arena at a time; the admission
        // loop's burst memory is in that thread's own arena).
        let _ = tokio::task::spawn_blocking(give_back).await;
        let after = rss_bytes();
        rule.returned(Instant::now(), before, after, load());
        log.debug(&format!(
            "returned memory to the OS: RSS {:.1} -> {:.1} MB in {} ms ({calls} calls open)",
            before as f64 / f64::from(1 << 20),
            after as f64 / f64::from(1 << 20),
            started.elapsed().as_millis()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    #[test]
    fn memory_is_returned_after_a_burst_has_settled() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut rule = TrimRule::new(start, 10 * MB, 0);
        assert!(!rule.observe(at(1), 10 * MB, 0), "no growth, no burst");
        assert!(!rule.observe(at(11), 20 * MB, 1000), "grew, not settled");
        assert!(!rule.observe(at(13), 20 * MB, 1000), "settling");
        assert!(rule.observe(at(14), 20 * MB, 1000), "grew, settled 3 s, 10 s since the last");
        rule.returned(at(14), 20 * MB, 12 * MB, 1000);
        assert!(!rule.observe(at(20), 12 * MB, 100), "burst over, load moving");
        assert!(!rule.observe(at(23), 12 * MB, 100), "load settled, but within 10 s of the last");
        assert!(rule.observe(at(24), 12 * MB, 100), "burst over (1000 -> 100), settled");
        rule.returned(at(24), 12 * MB, 12 * MB, 100);
        assert!(!rule.observe(at(40), 12 * MB, 100), "nothing since");
        assert!(!rule.observe(at(41), 12 * MB + MB / 2, 150), "grew under 5 %");
    }

    #[test]
    fn the_trim_waits_for_a_burst_to_close_and_one_that_gave_nothing_does_not_count() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut rule = TrimRule::new(start, 4 * MB, 0);
        assert!(!rule.observe(at(10), 300 * MB, 20_000), "grew, settling");
        assert!(rule.observe(at(14), 300 * MB, 20_000), "grew, settled: held, so it gives nothing");
        rule.returned(at(14), 300 * MB, 300 * MB, 20_000);
        assert!(!rule.observe(at(15), 300 * MB, 20_000), "still held");
        for (s, load) in [(16, 9_000), (17, 4_000), (18, 2)] {
            assert!(!rule.observe(at(s), 300 * MB, load), "closing: {load} left at {s} s");
        }
        assert!(!rule.observe(at(20), 300 * MB, 2), "closed, settling");
        assert!(rule.observe(at(21), 300 * MB, 2), "closed 3 s ago, 7 s after a trim that gave nothing");
    }

    #[test]
    fn rss_is_read() {
        assert!(rss_bytes() > MB);
    }
}
