package ziggurat

import (
	"context"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// RemoteBot describes a bot that connects once and plays every seat it is handed
// (BotService.ConnectBot), as tournaments and invitations use it.
type RemoteBot struct {
	Name       string    // 1–64 printable characters; registered on first connection
	Token      string    // the bot's secret; later connections under Name must show the same
	Games      []pb.Game // games it plays; empty: all
	MaxMatches uint32    // matches at once (default 1)
	// Chooser returns the bot for one assignment (called once per assignment).
	Chooser func(*pb.Assignment) ChooseFunc
	// Optional hooks: connected and registered; a match handed over; a match over
	// (OnMatchEnded runs on that match's goroutine: several may run at once).
	OnRegistered func(name string)
	OnAssignment func(*pb.Assignment)
	OnMatchEnded func(*pb.Assignment, *Result, error)
	Backoff      Backoff      // reconnection pacing; zero value: DefaultBackoff with no limit
	PlayOptions  *PlayOptions // passed to Play for each assignment
}

// InviteBot seats a connected remote bot in a match waiting for players (seat 0: the seat
// the match gives, as Join); the bot gets the seat as an Assignment. Returns the bot's seat.
// Only the match's creator may invite: creatorToken is the CreatorToken CreateMatch returned
// (sent as `authorization: Bearer`). Refusals: MISSING_TOKEN, BAD_TOKEN (not that match's
// creator token), BOT_NOT_CONNECTED, BOT_GAME, BOT_BUSY, TOO_MANY_INVITATIONS (the bot has
// as many invitations waiting to be played as the server allows), and those of Join.
func (c *Client) InviteBot(ctx context.Context, matchID, creatorToken, botName string, seat uint32) (uint32, error) {
	creator := Handle{MatchID: matchID, Token: creatorToken}
	request := &pb.InviteBotRequest{MatchId: matchID, BotName: botName, Seat: seat}
	response, err := c.Bots.InviteBot(creator.Context(ctx), request)
	if err != nil {
		return 0, FromError(err)
	}
	return response.GetSeat(), nil
}

// RunRemoteBot connects the bot and plays each Assignment in its own goroutine with Play,
// reconnecting with backoff when the connection drops (matches being played carry on). It
// returns when ctx is done, after its matches have stopped, or with *Error on a refusal
// that reconnecting cannot fix (e.g. BAD_TOKEN: the name belongs to another token).
func (c *Client) RunRemoteBot(ctx context.Context, bot RemoteBot) error {
	state := backoffState{Backoff: bot.Backoff}
	if state.Attempts == 0 {
		state.Backoff = DefaultBackoff
		state.Attempts = int(^uint(0) >> 1)
	}
	var matches sync.WaitGroup
	defer matches.Wait()
	for {
		err := c.remoteSession(ctx, bot, &state, &matches)
		if ctx.Err() != nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
		if !state.wait(ctx) {
			if ctx.Err() != nil {
				return nil
			}
			return &Error{Code: codes.Unavailable, Reason: ReasonGaveUp, Message: fmt.Sprintf("could not reconnect: %v", err)}
		}
	}
}

func (c *Client) remoteSession(ctx context.Context, bot RemoteBot, state *backoffState, matches *sync.WaitGroup) error {
	streamCtx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bot.Token))
	defer cancel()
	stream, err := c.Bots.ConnectBot(streamCtx, &pb.ConnectBotRequest{Name: bot.Name, Games: bot.Games, MaxMatches: bot.MaxMatches})
	if err != nil {
		return FromError(err)
	}
	for {
		response, err := stream.Recv()
		if err == io.EOF {
			return &Error{Code: codes.Unavailable, Message: "the server closed the bot stream"}
		}
		if err != nil {
			return FromError(err)
		}
		state.reset()
		if registered := response.GetRegistered(); registered != nil {
			if bot.OnRegistered != nil {
				bot.OnRegistered(registered.GetName())
			}
			continue
		}
		assignment := response.GetAssignment()
		if assignment == nil {
			continue
		}
		if bot.OnAssignment != nil {
			bot.OnAssignment(assignment)
		}
		matches.Add(1)
		go func() {
			defer matches.Done()
			handle := Handle{MatchID: assignment.GetMatchId(), Seat: assignment.GetSeat(), Token: assignment.GetToken()}
			result, err := c.Play(ctx, handle, bot.Chooser(assignment), bot.PlayOptions)
			if bot.OnMatchEnded != nil {
				bot.OnMatchEnded(assignment, result, err)
			}
		}()
	}
}
