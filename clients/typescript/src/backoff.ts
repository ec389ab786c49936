/** Reconnection pacing: exponential from initialMs to maxMs with ±50 % jitter; after
 * `attempts` consecutive failures (a success resets the count) the loop gives up. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
  attempts: number;
}

/** 0.1 s doubling to 5 s, 60 consecutive failures (about 4 minutes). */
export const DEFAULT_BACKOFF: Backoff = { initialMs: 100, maxMs: 5000, attempts: 60 };

export class BackoffState {
  private failures = 0;
  private delay = 0;
  constructor(readonly backoff: Backoff) {}

  reset(): void {
    this.failures = 0;
    this.delay = 0;
  }

  /** Sleeps before the next attempt; false when the budget is spent or signal aborted. */
  async wait(signal?: AbortSignal): Promise<boolean> {
    this.failures += 1;
    if (this.failures > this.backoff.attempts || signal?.aborted) {
      return false;
    }
    this.delay = this.delay === 0 ? this.backoff.initialMs : Math.min(this.backoff.maxMs, this.delay * 2);
    const ms = this.delay * (0.5 + Math.random());
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}
