package org.ziggurat.client;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with jitter between reconnection attempts. {@code attempts} counts
 * consecutive failures only: any message from the server resets the count and the delay, so
 * a long match survives any number of separate outages.
 */
public final class Backoff {
  private final Duration initial;
  private final Duration maximum;
  private final int attempts;
  private Duration delay = Duration.ZERO;
  private int failures;

  public Backoff(Duration initial, Duration maximum, int attempts) {
    this.initial = initial;
    this.maximum = maximum;
    this.attempts = attempts;
  }

  /** 100 ms doubling up to 5 s, giving up after 60 failures in a row. */
  public static Backoff standard() {
    return new Backoff(Duration.ofMillis(100), Duration.ofSeconds(5), 60);
  }

  /** The server answered: start again from the first delay. */
  public synchronized void reset() {
    delay = Duration.ZERO;
    failures = 0;
  }

  /** Sleeps before the next attempt; false once the budget of consecutive failures is spent. */
  public boolean sleep() throws InterruptedException {
    Duration wait;
    synchronized (this) {
      failures++;
      if (failures > attempts) {
        return false;
      }
      delay = delay.isZero() ? initial : min(delay.multipliedBy(2), maximum);
      wait = Duration.ofNanos((long) (delay.toNanos() * ThreadLocalRandom.current().nextDouble(0.5, 1.5)));
    }
    Thread.sleep(wait.toMillis(), (int) (wait.toNanos() % 1_000_000));
    return true;
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }
}
