package ziggurat

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff paces reconnection attempts: exponential from Initial to Maximum with ±50 %
// jitter; after Attempts consecutive failures (a success resets the count) the loop gives up.
type Backoff struct {
	Initial  time.Duration
	Maximum  time.Duration
	Attempts int
}

// DefaultBackoff is 0.1 s doubling to 5 s, 60 consecutive failures (about 4 minutes).
var DefaultBackoff = Backoff{Initial: 100 * time.Millisecond, Maximum: 5 * time.Second, Attempts: 60}

type backoffState struct {
	Backoff
	failures int
	delay    time.Duration
}

func (b *backoffState) reset() { b.failures, b.delay = 0, 0 }

// wait sleeps before the next attempt; false when the budget is spent or ctx is done.
func (b *backoffState) wait(ctx context.Context) bool {
	b.failures++
	if b.failures > b.Attempts {
		return false
	}
	if b.delay == 0 {
		b.delay = b.Initial
	} else {
		b.delay = min(b.Maximum, b.delay*2)
	}
	sleep := time.Duration(float64(b.delay) * (0.5 + rand.Float64()))
	timer := time.NewTimer(sleep)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
