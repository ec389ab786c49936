package ziggurat_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

const tournamentConfig = `
name = "go-remote"
seed = "go-remote-seed"
game = "pylos"
concurrency = 2

[options]
max_moves = 60

[time_control]
per_move_ms = 10000

[[participants]]
name = "go-bot"
remote = true
token_sha256 = "a777d655f8f3b7cdb110f275dfe99b07fa84c8a5a6094d831279d01bbcd5a0cf" # printf %s go-secret | sha256sum

[[participants]]
name = "house"
builtin = "random"
`

func freePort(t *testing.T) string {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close()
	return listener.Addr().String()
}

// A tournament (`ziggurat tournament run`) hands the Go remote bot its seats: one
// Assignment per game, each played in its own goroutine, all to the end.
func TestRemoteBotPlaysTheSeatsATournamentHandsIt(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "t.toml")
	if err := os.WriteFile(config, []byte(tournamentConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	address := freePort(t)
	db := filepath.Join(dir, "t.db")
	tournament := exec.Command(zigguratCommand(t), "tournament", "run", config, "--db", db, "--listen", address, "--quiet")
	var output strings.Builder
	tournament.Stdout, tournament.Stderr = &output, &output
	if err := tournament.Start(); err != nil {
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() { finished <- tournament.Wait() }()
	t.Cleanup(func() { _ = tournament.Process.Kill() })

	client := dial(t, address)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var registered []string
	var assignments []*pb.Assignment
	var results []*ziggurat.Result
	botDone := make(chan error, 1)
	go func() {
		botDone <- client.RunRemoteBot(ctx, ziggurat.RemoteBot{
			Name: "go-bot", Token: "go-secret", Games: []pb.Game{pb.Game_GAME_PYLOS}, MaxMatches: 2,
			Backoff: ziggurat.Backoff{Initial: 100 * time.Millisecond, Maximum: time.Second, Attempts: 300},
			Chooser: func(a *pb.Assignment) ziggurat.ChooseFunc { return newRandomChooser(a.GetBotSeed()).choose },
			OnRegistered: func(name string) {
				mu.Lock()
				registered = append(registered, name)
				mu.Unlock()
			},
			OnAssignment: func(a *pb.Assignment) {
				mu.Lock()
				assignments = append(assignments, a)
				mu.Unlock()
			},
			OnMatchEnded: func(a *pb.Assignment, r *ziggurat.Result, err error) {
				if err != nil {
					t.Errorf("match %s: %v", a.GetMatchId(), err)
					return
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			},
		})
	}()
	select {
	case err := <-finished:
		if err != nil {
			t.Fatalf("tournament: %v\n%s", err, output.String())
		}
	case <-ctx.Done():
		t.Fatalf("tournament did not finish:\n%s", output.String())
	}
	cancel()
	if err := <-botDone; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(registered) == 0 || registered[0] != "go-bot" {
		t.Fatalf("registered %v", registered)
	}
	if len(assignments) != 2 || len(results) != 2 {
		t.Fatalf("%d assignments, %d results\n%s", len(assignments), len(results), output.String())
	}
	seats := map[uint32]bool{}
	for _, a := range assignments {
		seats[a.GetSeat()] = true
		if a.GetConfig().GetGame() != pb.Game_GAME_PYLOS || a.GetToken() == "" {
			t.Fatalf("assignment %v", a)
		}
	}
	if !seats[1] || !seats[2] {
		t.Fatalf("colours were not swapped: seats %v", seats)
	}
	// The matches are in the tournament's database: a server on it lets `ziggurat verify` check them.
	server := &testServer{t: t, dir: dir}
	server.startOn(db)
	t.Cleanup(server.Kill)
	for _, a := range assignments {
		server.verify(a.GetMatchId())
	}
}

// A person invites the connected Go bot into a match (InviteBot) and plays it.
func TestRemoteBotInvitedIntoAMatch(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	botCtx, stopBot := context.WithCancel(ctx)
	defer stopBot()
	registered := make(chan struct{}, 1)
	ended := make(chan *ziggurat.Result, 1)
	botDone := make(chan error, 1)
	go func() {
		botDone <- client.RunRemoteBot(botCtx, ziggurat.RemoteBot{
			Name: "go-invitee", Token: "secret",
			Chooser:      func(*pb.Assignment) ziggurat.ChooseFunc { return newRandomChooser(5).choose },
			OnRegistered: func(string) { registered <- struct{}{} },
			OnMatchEnded: func(a *pb.Assignment, r *ziggurat.Result, err error) {
				if err != nil {
					t.Error(err)
				}
				ended <- r
			},
		})
	}()
	<-registered
	match, err := client.CreateMatch(ctx, ziggurat.Pylos(), nil)
	if err != nil {
		t.Fatal(err)
	}
	creator := match.CreatorToken
	if _, err := client.InviteBot(ctx, match.GetMatchId(), "", "go-invitee", 0); ziggurat.ReasonOf(err) != ziggurat.ReasonMissingToken {
		t.Fatalf("inviting without the creator token: %v", err)
	}
	other, err := client.CreateMatch(ctx, ziggurat.Pylos(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.InviteBot(ctx, match.GetMatchId(), other.CreatorToken, "go-invitee", 0); ziggurat.ReasonOf(err) != ziggurat.ReasonBadToken {
		t.Fatalf("inviting with another match's creator token: %v", err)
	}
	if _, err := client.InviteBot(ctx, match.GetMatchId(), creator, "nobody", 0); ziggurat.ReasonOf(err) != ziggurat.ReasonBotNotConnected {
		t.Fatalf("inviting a bot that is not connected: %v", err)
	}
	botSeat, err := client.InviteBot(ctx, match.GetMatchId(), creator, "go-invitee", 0)
	if err != nil {
		t.Fatal(err)
	}
	me, err := client.Join(ctx, match.GetMatchId(), "person", 0)
	if err != nil {
		t.Fatal(err)
	}
	if me.Seat == botSeat {
		t.Fatalf("both on seat %d", botSeat)
	}
	mine, err := client.Play(ctx, me, newRandomChooser(6).choose, nil)
	if err != nil {
		t.Fatal(err)
	}
	bots := <-ended
	if bots == nil || bots.Seat != botSeat || !slices.Equal(bots.History, mine.History) {
		t.Fatalf("the bot's result %+v", bots)
	}
	stopBot()
	if err := <-botDone; err != nil {
		t.Fatal(err)
	}
	server.verify(match.GetMatchId())
}
