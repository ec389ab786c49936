package ziggurat

import (
	"math"
	"testing"
	"time"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// A turn's time_left_ms is a uint64: one past what a time.Duration holds must still read as
// a long turn, not overflow into a negative one that is over before it starts.
func TestTimeLeftBeyondWhatADurationHoldsStaysALongTurn(t *testing.T) {
	for _, ms := range []uint64{math.MaxUint64, 1 << 63, maxTimeLeftMs + 1, maxTimeLeftMs} {
		event := &pb.Event{Kind: &pb.Event_TurnStarted{TurnStarted: &pb.TurnStartedEvent{TimeLeftMs: ms}}}
		left := (&player{}).leftOnArrival(event)
		if left <= 0 || time.Duration(left)*time.Millisecond <= 0 {
			t.Fatalf("time_left_ms %d: %d ms left, %v", ms, left, time.Duration(left)*time.Millisecond)
		}
		if deadline := time.Now().Add(time.Duration(left) * time.Millisecond); !deadline.After(time.Now().Add(100 * 365 * 24 * time.Hour)) {
			t.Fatalf("time_left_ms %d: a deadline of %v", ms, deadline)
		}
	}
	event := &pb.Event{Kind: &pb.Event_TurnStarted{TurnStarted: &pb.TurnStartedEvent{TimeLeftMs: 1500}}}
	if left := (&player{}).leftOnArrival(event); left != 1500 {
		t.Fatalf("an ordinary turn: %d ms left, want 1500", left)
	}
}
