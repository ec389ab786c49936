package ziggurat

import (
	"context"
	"fmt"
	"maps"
	"strings"

	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// ListGames returns every game the server hosts (MatchService.ListGames), in the order a
// lobby should offer them: name, title, seat counts, rule options and whether anything is
// hidden. A bot written before a game existed can still create and play it from this.
func (c *Client) ListGames(ctx context.Context) ([]*pb.GameInfo, error) {
	response, err := c.Matches.ListGames(ctx, &pb.ListGamesRequest{})
	if err != nil {
		return nil, FromError(err)
	}
	return response.GetGames(), nil
}

// UnknownGameError is a game name the server does not list; Known is every name it does,
// so the message can tell a person what to type instead.
type UnknownGameError struct {
	Name  string
	Known []string
}

func (e *UnknownGameError) Error() string {
	return fmt.Sprintf("unknown game %q: this server hosts %s", e.Name, strings.Join(e.Known, ", "))
}

// GameConfig is the configuration of the game the server lists under name ("pylos",
// "kabaleo", "phantom-ttt", or one added since): resolved through ListGames, so it needs no
// per-game code. seats 0 takes the game's fewest seats; options are the game's rule options
// by name, as GameInfo.options spells them (GameConfig.rule_options), and the server judges
// them (an undeclared key or a refused value: INVALID_CONFIG when the match is created). A
// name the server does not list is an *UnknownGameError.
func (c *Client) GameConfig(ctx context.Context, name string, seats uint32, options map[string]string) (*pb.GameConfig, error) {
	games, err := c.ListGames(ctx)
	if err != nil {
		return nil, err
	}
	known := make([]string, 0, len(games))
	for _, game := range games {
		if game.GetName() != name {
			known = append(known, game.GetName())
			continue
		}
		if seats == 0 {
			seats = game.GetMinSeats()
		}
		return &pb.GameConfig{Game: game.GetGame(), Seats: seats, RuleOptions: maps.Clone(options)}, nil
	}
	return nil, &UnknownGameError{Name: name, Known: known}
}
