use std::time::Duration;

use rand::Rng;

/// Exponential backoff with jitter between reconnection attempts.
///
/// `attempts` counts consecutive failures only: any message from the server resets both
/// the count and the delay, so a long match survives any number of separate outages.
#[derive(Debug, Clone)]
pub struct Backoff {
    /// First delay.
    pub initial: Duration,
    /// Largest delay.
    pub maximum: Duration,
    /// Consecutive failures tolerated before giving up (`GAVE_UP`).
    pub attempts: u32,
    delay: Duration,
    failures: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(Duration::from_millis(100), Duration::from_secs(5), 60)
    }
}

impl Backoff {
    /// A backoff from `initial` doubling up to `maximum`, giving up after `attempts` failures in a row.
    pub fn new(initial: Duration, maximum: Duration, attempts: u32) -> Self {
        Backoff {
            initial,
            maximum,
            attempts,
            delay: Duration::ZERO,
            failures: 0,
        }
    }

    /// The server answered: start again from the first delay.
    pub fn reset(&mut self) {
        self.delay = Duration::ZERO;
        self.failures = 0;
    }

    /// The wait before the next attempt (+/-50 % jitter), or `None` once the budget is spent.
    pub fn next_delay(&mut self) -> Option<Duration> {
        self.failures += 1;
        if self.failures > self.attempts {
            return None;
        }
        self.delay = if self.delay.is_zero() {
            self.initial
        } else {
            (self.delay * 2).min(self.maximum)
        };
        Some(self.delay.mul_f64(rand::rng().random_range(0.5..1.5)))
    }
}
