package ziggurat

import (
	"context"
	"fmt"
	"io"

	"google.golang.org/grpc/codes"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// WatchOptions are the optional parts of Watch.
type WatchOptions struct {
	Handle   Handle  // watch as this seat (its view); zero: as a spectator
	AfterSeq uint64  // start after this event (0: from the beginning)
	Backoff  Backoff // reconnection pacing; zero value: DefaultBackoff
}

// Watch calls onEvent with every event of the match after options.AfterSeq, in order and
// exactly once, until the match ends (then it returns nil) or onEvent returns an error.
// A dropped stream is resumed after the last event handled, with backoff.
func (c *Client) Watch(ctx context.Context, matchID string, options *WatchOptions, onEvent func(*pb.Event) error) error {
	var opts WatchOptions
	if options != nil {
		opts = *options
	}
	state := backoffState{Backoff: opts.Backoff}
	if state.Attempts == 0 {
		state.Backoff = DefaultBackoff
	}
	last := opts.AfterSeq
	for {
		done, err := c.watchOnce(ctx, matchID, opts.Handle, &last, &state, onEvent)
		if done {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !retryable(err) {
			return err
		}
		if !state.wait(ctx) {
			return &Error{Code: codes.Unavailable, Reason: ReasonGaveUp, Message: fmt.Sprintf("could not reconnect: %v", err)}
		}
	}
}

func (c *Client) watchOnce(ctx context.Context, matchID string, handle Handle, last *uint64, state *backoffState, onEvent func(*pb.Event) error) (bool, error) {
	streamCtx, cancel := context.WithCancel(handle.Context(ctx))
	defer cancel()
	route := c.Route(matchID)
	stream, err := c.stubFor(matchID).WatchMatch(streamCtx, &pb.WatchMatchRequest{MatchId: matchID, AfterSeq: *last})
	if err != nil {
		c.forgetRoute(matchID, route, err)
		return false, FromError(err)
	}
	for {
		response, err := stream.Recv()
		if err == io.EOF {
			return false, &Error{Code: codes.Unavailable, Message: "the server closed the stream before the match ended"}
		}
		if address := elsewhere(err); address != "" {
			// Another worker process owns the match: go there (the retry uses the new route).
			c.learnRoute(matchID, address)
			return false, &Error{Code: codes.Unavailable, Message: "the match is served at " + address}
		}
		if err != nil {
			// The owner's address stopped answering: the retry asks the dialled address.
			c.forgetRoute(matchID, route, err)
			return false, FromError(err)
		}
		state.reset()
		for _, event := range response.GetEvents() {
			if event.GetSeq() <= *last {
				continue
			}
			*last = event.GetSeq()
			if err := onEvent(event); err != nil {
				return true, err
			}
			if event.GetMatchEnded() != nil {
				return true, nil
			}
		}
	}
}
