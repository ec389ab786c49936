package ziggurat

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"google.golang.org/grpc/codes"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// Turn is one decision: everything the seat may know when it must move.
type Turn struct {
	MatchID    string
	Config     *pb.GameConfig // the game and its options
	Seat       uint32         // 1-based
	Ply        uint32         // moves played so far; the move chosen is the (Ply+1)-th
	View       *pb.GameView   // this seat's view (View.Position: hidden parts as "?")
	LegalMoves []string       // every legal move, sorted; answer with one of them
	// TimeLeft is what is left of this turn's time when the bot is asked; 0 = untimed. A
	// turn read from a resumed stream's backlog (the bot connected or reconnected mid-turn)
	// has been running for PlayResponse.server_time_ms - Event.time_ms already, both on the
	// server's clock; the time since that message arrived is counted on this machine's
	// monotonic clock, never compared with the server's. At least 1 ms when timed.
	TimeLeft time.Duration
	History  []string    // moves played so far, in order
	Rejected []Rejection // moves already refused for this turn (empty on the first ask)
}

// ChooseFunc is the bot: it returns the move to play (normally one of turn.LegalMoves). An
// error stops Play and is returned by it.
type ChooseFunc func(ctx context.Context, turn *Turn) (string, error)

// PlayOptions are the optional hooks and limits of Play.
type PlayOptions struct {
	OnEvent    func(*pb.Event) // every event of the match once, in order (seat's own view)
	OnRejected func(Rejection) // a move refused on the stream (the turn is then asked again)
	Backoff    Backoff         // reconnection pacing; zero value: DefaultBackoff
	// MaxRejections: refused moves in a row on one turn before Play gives up with
	// *RejectedError (default 3).
	MaxRejections int
}

// Result is how a played match ended for the seat.
type Result struct {
	Seat    uint32
	Ended   *pb.MatchEndedEvent // outcome, revealed seed and the revealing final view
	LastSeq uint64
	History []string // every move of the match, in order
}

// Rank is the seat's rank (1 is best).
func (r *Result) Rank() uint32 { return r.Ended.GetOutcome().GetRanks()[r.Seat-1] }

type player struct {
	client     *Client
	handle     Handle
	choose     ChooseFunc
	options    PlayOptions
	backoff    backoffState
	config     *pb.GameConfig
	lastSeq    uint64
	view       *pb.GameView
	history    []string
	pending    *pb.TurnStartedEvent // this seat's turn, not yet followed by its move
	chosen     string               // the move chosen for pending (re-sent after a reconnect)
	sent       bool                 // chosen was sent on the current stream
	rejections []Rejection
	deadline   time.Time // when pending's time runs out, on this machine's monotonic clock
	// The message being applied: the server's clock when it was sent (0 from a server that
	// does not say) and this machine's clock (monotonic reading) when it arrived.
	sentMs     int64
	receivedAt time.Time
}

// Play plays the seat of handle with choose until the match ends, on the bidirectional
// Play stream. It asks choose only for the turn that is current: after a reconnection it
// replays the events it missed (resuming after the last one it handled, so none is lost
// or seen twice) and answers a TurnStarted only once nothing has followed it. A move sent
// just before the connection dropped is sent again with its ply guard, which makes a
// duplicate harmless. Dropped connections and server restarts are retried with backoff;
// refusals that retrying cannot fix are returned as *Error.
func (c *Client) Play(ctx context.Context, handle Handle, choose ChooseFunc, options *PlayOptions) (*Result, error) {
	p := &player{client: c, handle: handle, choose: choose}
	if options != nil {
		p.options = *options
	}
	if p.options.MaxRejections == 0 {
		p.options.MaxRejections = 3
	}
	p.backoff.Backoff = p.options.Backoff
	if p.backoff.Attempts == 0 {
		p.backoff.Backoff = DefaultBackoff
	}
	for {
		ended, err := p.session(ctx)
		if ended != nil {
			return &Result{Seat: handle.Seat, Ended: ended, LastSeq: p.lastSeq, History: p.history}, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retryable(err) {
			return nil, err
		}
		if !p.backoff.wait(ctx) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &Error{Code: codes.Unavailable, Reason: ReasonGaveUp, Message: fmt.Sprintf("could not reconnect: %v", err)}
		}
	}
}

// session is one Play stream: catch up, then play live until the match ends or the stream fails.
func (p *player) session(ctx context.Context) (_ *pb.MatchEndedEvent, err error) {
	match, err := p.client.GetMatch(ctx, p.handle.MatchID, p.handle)
	if err != nil {
		return nil, err
	}
	p.config = match.GetConfig()
	caughtUpAt := match.GetLastSeq() // events up to here are history, not turns to answer
	streamCtx, cancel := context.WithCancel(p.handle.Context(ctx))
	defer cancel()
	route := p.client.Route(p.handle.MatchID)
	// The owner's address stopped answering: the next session asks the dialled address.
	defer func() { p.client.forgetRoute(p.handle.MatchID, route, err) }()
	stream, err := p.client.stubFor(p.handle.MatchID).Play(streamCtx)
	if err != nil {
		return nil, FromError(err)
	}
	p.sent = false
	if err := stream.Send(&pb.PlayRequest{MatchId: p.handle.MatchID, AfterSeq: p.lastSeq}); err != nil {
		return nil, p.streamError(stream, err)
	}
	for {
		response, err := stream.Recv()
		if err == io.EOF {
			return nil, &Error{Code: codes.Unavailable, Message: "the server closed the stream before the match ended"}
		}
		if err != nil {
			return nil, FromError(err)
		}
		p.backoff.reset()
		p.sentMs, p.receivedAt = response.GetServerTimeMs(), time.Now()
		if rejected := response.GetMoveRejected(); rejected != nil {
			if err := p.rejected(rejected); err != nil {
				return nil, err
			}
		}
		for _, event := range response.GetEvents() {
			if ended := p.apply(event); ended != nil {
				return ended, nil
			}
		}
		if p.pending != nil && !p.sent && p.lastSeq >= caughtUpAt {
			if err := p.answer(ctx, stream); err != nil {
				return nil, err
			}
		}
	}
}

// apply records one event; it returns the MatchEnded event when the match is over.
func (p *player) apply(event *pb.Event) *pb.MatchEndedEvent {
	if event.GetSeq() <= p.lastSeq {
		return nil // already handled (cannot happen with a correct server; harmless)
	}
	p.lastSeq = event.GetSeq()
	if p.options.OnEvent != nil {
		p.options.OnEvent(event)
	}
	switch kind := event.GetKind().(type) {
	case *pb.Event_MatchStarted:
		p.view = kind.MatchStarted.GetView()
	case *pb.Event_MovePlayed:
		p.view = kind.MovePlayed.GetView()
		p.history = append(p.history, kind.MovePlayed.GetMove())
		p.pending, p.chosen, p.sent, p.rejections = nil, "", false, nil
	case *pb.Event_TurnStarted:
		if kind.TurnStarted.GetSeat() == p.handle.Seat {
			if p.pending == nil || p.pending.GetPly() != kind.TurnStarted.GetPly() {
				p.chosen, p.rejections = "", nil
			}
			p.pending, p.sent = kind.TurnStarted, false
			p.deadline = p.receivedAt.Add(time.Duration(p.leftOnArrival(event)) * time.Millisecond)
		} else {
			p.pending, p.chosen, p.sent = nil, "", false
		}
	case *pb.Event_MatchEnded:
		return kind.MatchEnded
	}
	return nil
}

// maxTimeLeftMs bounds a turn's time_left_ms (a uint64) in the arithmetic below: past it
// a time.Duration, int64 nanoseconds, would overflow (about 292 years), and a larger value
// would turn negative and read as a turn already over.
const maxTimeLeftMs = uint64(math.MaxInt64 / int64(time.Millisecond))

// leftOnArrival is the milliseconds of a TurnStarted's time that were left when the message
// carrying it was sent: time_left_ms less what had run since the event on the server's clock
// (a turn read from a resumed stream's backlog started long before; a live one just now).
func (p *player) leftOnArrival(event *pb.Event) int64 {
	left := int64(min(event.GetTurnStarted().GetTimeLeftMs(), maxTimeLeftMs))
	if p.sentMs != 0 {
		left -= max(0, p.sentMs-event.GetTimeMs())
	}
	return left
}

func (p *player) rejected(message *pb.MoveRejected) error {
	ply := uint32(0)
	if p.pending != nil {
		ply = p.pending.GetPly()
	}
	rejection := rejectionFrom(message, ply)
	if p.options.OnRejected != nil {
		p.options.OnRejected(rejection)
	}
	if p.pending == nil || message.GetMove() != p.chosen {
		return nil // a late verdict on a move for a turn that is over
	}
	p.rejections = append(p.rejections, rejection)
	if len(p.rejections) >= p.options.MaxRejections {
		return &RejectedError{Rejections: p.rejections}
	}
	p.chosen, p.sent = "", false // ask the bot again, showing it the refusal
	return nil
}

type playStream interface {
	Send(*pb.PlayRequest) error
	Recv() (*pb.PlayResponse, error)
}

func (p *player) answer(ctx context.Context, stream playStream) error {
	turn := p.pending
	if p.chosen == "" {
		timeLeft := time.Duration(0) // untimed
		if turn.GetTimeLeftMs() != 0 {
			timeLeft = max(time.Millisecond, time.Until(p.deadline).Truncate(time.Millisecond))
		}
		move, err := p.choose(ctx, &Turn{
			MatchID:    p.handle.MatchID,
			Config:     p.config,
			Seat:       p.handle.Seat,
			Ply:        turn.GetPly(),
			View:       p.view,
			LegalMoves: turn.GetLegalMoves(),
			TimeLeft:   timeLeft,
			History:    append([]string(nil), p.history...),
			Rejected:   append([]Rejection(nil), p.rejections...),
		})
		if err != nil {
			return err
		}
		p.chosen = move
	}
	ply := turn.GetPly()
	if err := stream.Send(&pb.PlayRequest{Move: p.chosen, Ply: &ply}); err != nil {
		return p.streamError(stream, err)
	}
	p.sent = true
	return nil
}

// streamError turns a failed Send into the stream's real status (Send only says io.EOF).
func (p *player) streamError(stream playStream, err error) error {
	if err == io.EOF {
		if _, recvErr := stream.Recv(); recvErr != nil && recvErr != io.EOF {
			return FromError(recvErr)
		}
		return &Error{Code: codes.Unavailable, Message: "the stream closed while sending"}
	}
	return FromError(err)
}
