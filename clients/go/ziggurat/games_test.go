package ziggurat_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// Any game by its name, through ListGames, on one real server: the listing, options by name,
// an unknown name, and phantom tic-tac-toe (a game with no Go helper, private moves and a
// hidden board) played to a verified end by bots that read only the generic view.
func TestAnyGameByName(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)

	t.Run("ListGames names every game", func(t *testing.T) {
		games, err := client.ListGames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, len(games))
		for i, game := range games {
			names[i] = game.GetName()
			if game.GetMinSeats() == 0 || game.GetMinSeats() > game.GetMaxSeats() || game.GetTitle() == "" {
				t.Errorf("%s: seats %d..%d, title %q", game.GetName(), game.GetMinSeats(), game.GetMaxSeats(), game.GetTitle())
			}
		}
		if len(names) < 3 || !slices.Equal(names[:3], []string{"pylos", "kabaleo", "phantom-ttt"}) {
			t.Fatalf("ListGames named %v", names) // the registry's order; games added later follow
		}
		if phantom := games[2]; phantom.GetGame() != pb.Game_GAME_PHANTOM_TIC_TAC_TOE || !phantom.GetPrivateMoves() {
			t.Fatalf("phantom-ttt listed as %v", phantom)
		}
	})

	t.Run("options by name reach the match", func(t *testing.T) {
		config, err := client.GameConfig(ctx, "pylos", 0, map[string]string{"variant": "beginner"})
		if err != nil {
			t.Fatal(err)
		}
		match, err := client.CreateMatch(ctx, config, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := match.GetConfig() // a game with a typed message answers in it
		if got.GetSeats() != 2 || got.GetPylos().GetVariant() != pb.PylosVariant_PYLOS_VARIANT_BEGINNER {
			t.Fatalf("created %v", got)
		}
		config, err = client.GameConfig(ctx, "kabaleo", 3, map[string]string{"deal": "equal"})
		if err != nil {
			t.Fatal(err)
		}
		if match, err = client.CreateMatch(ctx, config, nil); err != nil {
			t.Fatal(err)
		}
		if got := match.GetConfig(); got.GetSeats() != 3 || got.GetKabaleo().GetDeal() != pb.KabaleoDeal_KABALEO_DEAL_EQUAL {
			t.Fatalf("created %v", got)
		}
	})

	t.Run("an option the game refuses creates nothing", func(t *testing.T) {
		before, err := client.ListMatches(ctx, pb.MatchStatus_MATCH_STATUS_UNSPECIFIED)
		if err != nil {
			t.Fatal(err)
		}
		config, err := client.GameConfig(ctx, "phantom-ttt", 0, map[string]string{"size": "4"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.CreateMatch(ctx, config, nil)
		var refused *ziggurat.Error
		if !errors.As(err, &refused) || refused.Reason != "INVALID_CONFIG" {
			t.Fatalf("want INVALID_CONFIG, got %v", err)
		}
		after, err := client.ListMatches(ctx, pb.MatchStatus_MATCH_STATUS_UNSPECIFIED)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Fatalf("%d matches before, %d after", len(before), len(after))
		}
	})

	t.Run("an unknown name says the known ones", func(t *testing.T) {
		games, err := client.ListGames(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := make([]string, len(games))
		for i, game := range games {
			names[i] = game.GetName()
		}
		_, err = client.GameConfig(ctx, "chess", 2, nil)
		var unknown *ziggurat.UnknownGameError
		if !errors.As(err, &unknown) || unknown.Name != "chess" {
			t.Fatalf("want *UnknownGameError, got %v", err)
		}
		if want := `unknown game "chess": this server hosts ` + strings.Join(names, ", "); err.Error() != want || !slices.Equal(unknown.Known, names) {
			t.Fatalf("got %q, want %q", err, want)
		}
	})

	t.Run("phantom-ttt played to a verified end", func(t *testing.T) {
		config, err := client.GameConfig(ctx, "phantom-ttt", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if config.GetGame() != pb.Game_GAME_PHANTOM_TIC_TAC_TOE || config.GetSeats() != 2 {
			t.Fatalf("config %v", config)
		}
		match, err := client.CreateMatch(ctx, config, nil)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		positions := 0
		results := make([]*ziggurat.Result, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range results {
			handle, err := client.Join(ctx, match.GetMatchId(), "go", 0)
			if err != nil {
				t.Fatal(err)
			}
			random := newRandomChooser(uint64(i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = client.Play(ctx, handle, func(ctx context.Context, turn *ziggurat.Turn) (string, error) {
					mu.Lock()
					if turn.View.GetPosition() != "" && turn.Config.GetGame() == pb.Game_GAME_PHANTOM_TIC_TAC_TOE {
						positions++
					}
					mu.Unlock()
					return random.choose(ctx, turn)
				}, nil)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		record, err := client.Record(ctx, match.GetMatchId())
		if err != nil {
			t.Fatal(err)
		}
		if termination := record.GetOutcome().GetTermination(); termination != pb.Termination_TERMINATION_NORMAL {
			t.Fatalf("ended by %v", termination)
		}
		if positions != len(record.GetMoves()) {
			t.Fatalf("%d turns had the generic view, the record has %d moves", positions, len(record.GetMoves()))
		}
		for _, result := range results {
			if len(result.History) != len(record.GetMoves()) {
				t.Fatalf("seat %d saw %d plies, the record has %d", result.Seat, len(result.History), len(record.GetMoves()))
			}
			own := 0
			for i, move := range record.GetMoves() {
				if move.GetSubstituted() {
					t.Errorf("move %d was played by the server, not the bot", i+1)
				}
				switch result.History[i] { // private moves: a seat sees its own, the others' are empty
				case move.GetMove():
					own++
				case "":
				default:
					t.Fatalf("seat %d saw move %d as %q, the record has %q", result.Seat, i+1, result.History[i], move.GetMove())
				}
			}
			if own == 0 || own == len(record.GetMoves()) {
				t.Fatalf("seat %d saw %d of %d moves: want its own only", result.Seat, own, len(record.GetMoves()))
			}
		}
		server.verify(match.GetMatchId())
	})
}
