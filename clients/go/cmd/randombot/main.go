// Command randombot is the Go starter bot: it plays uniformly random legal moves.
//
//	randombot -server 127.0.0.1:50051 -create pylos          # create a match, print its id, play it
//	randombot -server 127.0.0.1:50051 -create phantom-ttt    # any game the server lists (ListGames)
//	randombot -server 127.0.0.1:50051 -match MATCH_ID        # join a match and play it
//	randombot -server 127.0.0.1:50051 -remote -token SECRET  # wait to be handed seats
//	ZIGGURAT_BOT_TOKEN=SECRET randombot -remote -name NAME   # the same, the token kept off the command line
//
// Replace choose with your own bot.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/signal"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

func choose(_ context.Context, turn *ziggurat.Turn) (string, error) {
	return turn.LegalMoves[rand.IntN(len(turn.LegalMoves))], nil
}

func main() {
	server := flag.String("server", "127.0.0.1:50051", "server address HOST:PORT")
	create := flag.String("create", "", "create a match of this game (any name the server lists: pylos, kabaleo, phantom-ttt, ...) and play it")
	seats := flag.Uint("seats", 0, "seats of a created match (default: the game's fewest)")
	matchID := flag.String("match", "", "join this match and play it")
	name := flag.String("name", "go-random", "player or bot name")
	remote := flag.Bool("remote", false, "connect as a remote bot and play the seats handed to it")
	token := flag.String("token", os.Getenv("ZIGGURAT_BOT_TOKEN"), "remote bot token (default $ZIGGURAT_BOT_TOKEN; a secret of your choosing, or the one an arena issued)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client, err := ziggurat.Dial(*server)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if *remote {
		err := client.RunRemoteBot(ctx, ziggurat.RemoteBot{
			Name: *name, Token: *token, MaxMatches: 4,
			Chooser:      func(*pb.Assignment) ziggurat.ChooseFunc { return choose },
			OnRegistered: func(n string) { fmt.Printf("connected as remote bot %s\n", n) },
			OnMatchEnded: func(a *pb.Assignment, r *ziggurat.Result, err error) {
				if err != nil {
					fmt.Printf("match %s: %v\n", a.GetMatchId(), err)
				} else {
					fmt.Printf("match %s over: rank %d\n", a.GetMatchId(), r.Rank())
				}
			},
		})
		if err != nil {
			log.Fatal(err)
		}
		return
	}
	if *create != "" {
		// Any game the server hosts, by its name: resolved through ListGames, so this bot
		// plays games added after it was written (choose only picks among LegalMoves).
		config, err := client.GameConfig(ctx, *create, uint32(*seats), nil)
		var unknown *ziggurat.UnknownGameError
		if errors.As(err, &unknown) {
			fmt.Fprintln(os.Stderr, err) // one line naming the server's games
			os.Exit(2)
		}
		if err != nil {
			log.Fatal(err)
		}
		match, err := client.CreateMatch(ctx, config, nil)
		if err != nil {
			log.Fatal(err)
		}
		*matchID = match.GetMatchId()
		fmt.Printf("created match %s\n", *matchID)
	}
	handle, err := client.Join(ctx, *matchID, *name, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("playing seat %d of match %s\n", handle.Seat, handle.MatchID)
	result, err := client.Play(ctx, handle, choose, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("match %s over: ranks %v, this seat ranked %d\n", handle.MatchID, result.Ended.GetOutcome().GetRanks(), result.Rank())
}
