package ziggurat_test

import (
	"net"
	"testing"
	"time"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// deadAddress is a loopback address nothing listens on (connections to it are refused).
func deadAddress(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	_ = listener.Close()
	return address
}

// A match whose learnt owner address stopped answering (its worker came back on another
// port, or the server restarted) is still served: the client forgets the route and asks the
// dialled address, for unary calls at once, for Play and Watch on their next reconnection.
func TestADeadRouteFallsBackToTheDialledAddress(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	seats := []*ziggurat.Client{dial(t, s.Address), dial(t, s.Address)}
	created, err := seats[0].CreateMatch(ctx, ziggurat.Pylos(), nil)
	if err != nil {
		t.Fatal(err)
	}
	matchID := created.GetMatchId()
	seats[0].LearnRoute(matchID, deadAddress(t))
	first, err := seats[0].Join(ctx, matchID, "first", 0)
	if err != nil {
		t.Fatalf("join with a dead route: %v", err)
	}
	if route := seats[0].Route(matchID); route != "" {
		t.Fatalf("the dead route is kept: %q", route)
	}
	second, err := seats[1].Join(ctx, matchID, "second", 0)
	if err != nil {
		t.Fatal(err)
	}
	watcher := dial(t, s.Address)
	for _, client := range append(seats, watcher) { // every stream starts on a dead address
		client.LearnRoute(matchID, deadAddress(t))
	}
	fast := &ziggurat.PlayOptions{Backoff: ziggurat.Backoff{Initial: 50 * time.Millisecond, Maximum: 500 * time.Millisecond, Attempts: 5}}
	done := make(chan error, 2)
	for i, handle := range []ziggurat.Handle{first, second} {
		chooser := newRandomChooser(uint64(i + 1))
		go func() {
			_, err := seats[i].Play(ctx, handle, chooser.choose, fast)
			done <- err
		}()
	}
	var seqs []uint64
	played := 0
	err = watcher.Watch(ctx, matchID, &ziggurat.WatchOptions{Backoff: fast.Backoff}, func(event *pb.Event) error {
		seqs = append(seqs, event.GetSeq())
		if event.GetMovePlayed() != nil {
			played++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("watch with a dead route: %v", err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("play with a dead route: %v", err)
		}
	}
	for i, seq := range seqs {
		if seq != uint64(i+1) {
			t.Fatalf("events %v: not every event once, in order", seqs)
		}
	}
	watcher.LearnRoute(matchID, deadAddress(t))
	record, err := watcher.Record(ctx, matchID)
	if err != nil {
		t.Fatalf("record with a dead route: %v", err)
	}
	if len(record.GetMoves()) != played {
		t.Fatalf("%d moves recorded, %d watched", len(record.GetMoves()), played)
	}
}

// Only an address that did not answer is forgotten: a refusal from the owner keeps its route.
func TestARefusalFromTheOwnerKeepsItsRoute(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	client := dial(t, s.Address)
	created, err := client.CreateMatch(ctx, ziggurat.Pylos(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The owner is the server itself, under another name: it answers, and refuses.
	alias := "localhost:" + s.Address[len("127.0.0.1:"):]
	client.LearnRoute(created.GetMatchId(), alias)
	_, err = client.SubmitMove(ctx, ziggurat.Handle{MatchID: created.GetMatchId(), Seat: 1, Token: "forged"}, "x", -1)
	if ziggurat.ReasonOf(err) != ziggurat.ReasonBadToken {
		t.Fatalf("SubmitMove with a forged token: %v", err)
	}
	if route := client.Route(created.GetMatchId()); route != alias {
		t.Fatalf("route %q after a refusal, want %q", route, alias)
	}
}
