package ziggurat_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// playAll joins every seat of a new match and plays them with random bots to the end.
func playAll(t *testing.T, ctx context.Context, client *ziggurat.Client, config *pb.GameConfig) (string, []*ziggurat.Result) {
	t.Helper()
	match, err := client.CreateMatch(ctx, config, nil)
	if err != nil {
		t.Fatal(err)
	}
	handles := make([]ziggurat.Handle, config.GetSeats())
	for i := range handles {
		if handles[i], err = client.Join(ctx, match.GetMatchId(), "go", 0); err != nil {
			t.Fatal(err)
		}
	}
	results := make([]*ziggurat.Result, len(handles))
	errs := make([]error, len(handles))
	var wg sync.WaitGroup
	for i, handle := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = client.Play(ctx, handle, newRandomChooser(uint64(i)).choose, nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("seat %d: %v", handles[i].Seat, err)
		}
	}
	return match.GetMatchId(), results
}

func checkFinished(t *testing.T, ctx context.Context, server *testServer, client *ziggurat.Client, matchID string, results []*ziggurat.Result) {
	t.Helper()
	record, err := client.Record(ctx, matchID)
	if err != nil {
		t.Fatal(err)
	}
	moves := make([]string, len(record.GetMoves()))
	for i, move := range record.GetMoves() {
		moves[i] = move.GetMove()
		if move.GetSubstituted() {
			t.Errorf("move %d was played by the server, not the bot", i+1)
		}
	}
	for _, result := range results {
		if !slices.Equal(result.History, moves) {
			t.Fatalf("seat %d saw %d moves, the record has %d", result.Seat, len(result.History), len(moves))
		}
		if !slices.Equal(result.Ended.GetOutcome().GetRanks(), record.GetOutcome().GetRanks()) {
			t.Fatalf("seat %d: outcome differs from the record", result.Seat)
		}
	}
	server.verify(matchID)
}

func TestPlaysFullPylosMatch(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	matchID, results := playAll(t, ctx, client, ziggurat.Pylos())
	if termination := results[0].Ended.GetOutcome().GetTermination(); termination == pb.Termination_TERMINATION_UNSPECIFIED {
		t.Fatal("no termination")
	}
	checkFinished(t, ctx, server, client, matchID, results)
}

func TestPlaysFullFourSeatKabaleoMatch(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	matchID, results := playAll(t, ctx, client, ziggurat.Kabaleo(4))
	if got := results[0].Ended.GetOutcome().GetTermination(); got != pb.Termination_TERMINATION_NORMAL {
		t.Fatalf("termination %v", got)
	}
	// Every seat learns every objective at the end, and only then.
	for _, result := range results {
		if objectives := result.Ended.GetView().GetKabaleo().GetObjectives(); slices.Contains(objectives, "?") {
			t.Fatalf("seat %d: final view still hides objectives %v", result.Seat, objectives)
		}
	}
	checkFinished(t, ctx, server, client, matchID, results)
}

func TestRefusalsCarryTypedReasons(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	match, err := client.CreateMatch(ctx, ziggurat.Pylos(), &ziggurat.CreateOptions{SeatAssignment: pb.SeatAssignment_SEAT_ASSIGNMENT_CHOSEN})
	if err != nil {
		t.Fatal(err)
	}
	first, _ := client.Join(ctx, match.GetMatchId(), "first", 1)
	second, _ := client.Join(ctx, match.GetMatchId(), "second", 2)
	expect := func(err error, code codes.Code, reason string) {
		t.Helper()
		var refused *ziggurat.Error
		if !errors.As(err, &refused) || refused.Code != code || refused.Reason != reason {
			t.Fatalf("want %v %s, got %v", code, reason, err)
		}
	}
	_, err = client.SubmitMove(ctx, first, "4a1", -1) // a place on the top level: not legal now
	expect(err, codes.FailedPrecondition, ziggurat.ReasonIllegalMove)
	_, err = client.SubmitMove(ctx, first, "not a move", -1)
	expect(err, codes.InvalidArgument, ziggurat.ReasonMalformedMove)
	_, err = client.SubmitMove(ctx, second, "1a1", -1)
	expect(err, codes.FailedPrecondition, ziggurat.ReasonNotYourTurn)
	_, err = client.SubmitMove(ctx, first, "1a1", 5)
	expect(err, codes.FailedPrecondition, ziggurat.ReasonStalePly)
	_, err = client.Join(ctx, match.GetMatchId(), "third", 0)
	expect(err, codes.FailedPrecondition, ziggurat.ReasonMatchFull)
	_, err = client.CancelMatch(ctx, match.GetMatchId(), match.CreatorToken)
	expect(err, codes.FailedPrecondition, ziggurat.ReasonNotWaiting) // it has started
	_, err = client.GetMatch(ctx, "no-such-match", ziggurat.Handle{})
	expect(err, codes.NotFound, ziggurat.ReasonMatchNotFound)
	_, err = client.SubmitMove(ctx, ziggurat.Handle{MatchID: match.GetMatchId(), Token: "forged"}, "1a1", -1)
	expect(err, codes.PermissionDenied, ziggurat.ReasonBadToken)

	// On the Play stream: the refusal reaches the bot as a typed Rejection and the turn is
	// asked again (showing the refusal); nothing changed in between.
	var rejections []ziggurat.Rejection
	var asked []*ziggurat.Turn
	sly := func(_ context.Context, turn *ziggurat.Turn) (string, error) {
		asked = append(asked, turn)
		if len(asked) == 1 {
			return "4a1", nil
		}
		return turn.LegalMoves[0], nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := client.Play(ctx, second, newRandomChooser(2).choose, nil)
		done <- err
	}()
	options := &ziggurat.PlayOptions{OnRejected: func(r ziggurat.Rejection) { rejections = append(rejections, r) }}
	if _, err := client.Play(ctx, first, sly, options); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(rejections) != 1 || rejections[0].Reason != ziggurat.ReasonIllegalMove || rejections[0].Move != "4a1" {
		t.Fatalf("rejections %+v", rejections)
	}
	if asked[0].Ply != 0 || asked[1].Ply != 0 || len(asked[1].Rejected) != 1 || len(asked[0].Rejected) != 0 {
		t.Fatalf("the refused turn was not asked again with its refusal: %+v %+v", asked[0], asked[1])
	}
	record, _ := client.Record(ctx, match.GetMatchId())
	if record.GetMoves()[0].GetMove() != asked[1].LegalMoves[0] {
		t.Fatalf("first move %q", record.GetMoves()[0].GetMove())
	}
	server.verify(match.GetMatchId())

	// A bot that only ever plays illegal moves is stopped with the refusals it got.
	match2, _ := client.CreateMatch(ctx, ziggurat.Pylos(), &ziggurat.CreateOptions{SeatAssignment: pb.SeatAssignment_SEAT_ASSIGNMENT_CHOSEN})
	stubborn, _ := client.Join(ctx, match2.GetMatchId(), "stubborn", 1)
	_, _ = client.Join(ctx, match2.GetMatchId(), "other", 2)
	_, err = client.Play(ctx, stubborn, func(context.Context, *ziggurat.Turn) (string, error) { return "4a1", nil }, nil)
	var gaveUp *ziggurat.RejectedError
	if !errors.As(err, &gaveUp) || len(gaveUp.Rejections) != 3 || gaveUp.Rejections[2].Reason != ziggurat.ReasonIllegalMove {
		t.Fatalf("want RejectedError with 3 ILLEGAL_MOVE, got %v", err)
	}
}

func TestCancelsAWaitingMatchWithTheCreatorToken(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	match, err := client.CreateMatch(ctx, ziggurat.Kabaleo(3), nil)
	if err != nil || match.CreatorToken == "" {
		t.Fatalf("%v %v", match, err)
	}
	if _, err := client.Join(ctx, match.GetMatchId(), "early", 0); err != nil {
		t.Fatal(err)
	}
	_, err = client.CancelMatch(ctx, match.GetMatchId(), "not-the-creator")
	if ziggurat.ReasonOf(err) != ziggurat.ReasonBadToken {
		t.Fatalf("want BAD_TOKEN, got %v", err)
	}
	cancelled, err := client.CancelMatch(ctx, match.GetMatchId(), match.CreatorToken)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.GetStatus() != pb.MatchStatus_MATCH_STATUS_FINISHED || cancelled.GetRevealedSeed() == "" {
		t.Fatalf("after cancel: %v", cancelled)
	}
	if record, err := client.Record(ctx, match.GetMatchId()); err != nil || record.GetOutcome().GetTermination() != pb.Termination_TERMINATION_ABORTED {
		t.Fatalf("record of the cancelled match: %v %v", record, err)
	}
	var refused *ziggurat.Error
	if _, err := client.Join(ctx, match.GetMatchId(), "late", 0); !errors.As(err, &refused) || refused.Code != codes.FailedPrecondition {
		t.Fatalf("joining a cancelled match: %v", err)
	}
}

func TestAnswersOnlyTheCurrentTurnWhenJoiningLate(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	match, _ := client.CreateMatch(ctx, ziggurat.Pylos(), &ziggurat.CreateOptions{SeatAssignment: pb.SeatAssignment_SEAT_ASSIGNMENT_CHOSEN})
	first, _ := client.Join(ctx, match.GetMatchId(), "first", 1)
	second, _ := client.Join(ctx, match.GetMatchId(), "second", 2)
	// Six plies played by hand: the log now holds six past TurnStarted events for the seats.
	for ply, move := range []string{"1a1", "1a2", "1a3", "1a4", "1b1", "1b2"} {
		seat := []ziggurat.Handle{first, second}[ply%2]
		if _, err := client.SubmitMove(ctx, seat, move, int64(ply)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	choosers := []*randomChooser{newRandomChooser(1), newRandomChooser(2)}
	for i, handle := range []ziggurat.Handle{first, second} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := client.Play(ctx, handle, choosers[i].choose, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if choosers[0].asked[0] != 6 || choosers[1].asked[0] != 7 {
		t.Fatalf("asked about past turns: seat 1 first asked at ply %d, seat 2 at %d", choosers[0].asked[0], choosers[1].asked[0])
	}
	for i, chooser := range choosers {
		for j := 1; j < len(chooser.asked); j++ {
			if chooser.asked[j] != chooser.asked[j-1]+2 {
				t.Fatalf("seat %d asked plies %v", i+1, chooser.asked)
			}
		}
	}
	server.verify(match.GetMatchId())
}

func TestSurvivesServerKilledAndRestartedMidMatch(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	config := ziggurat.Kabaleo(3)
	match, err := client.CreateMatch(ctx, config, nil)
	if err != nil {
		t.Fatal(err)
	}
	handles := make([]ziggurat.Handle, 3)
	for i := range handles {
		handles[i], _ = client.Join(ctx, match.GetMatchId(), "go", 0)
	}
	// The seat to move at ply 8 kills the server (SIGKILL) and answers anyway: its move is
	// lost in flight, must be sent again after the restart, and played exactly once.
	var killOnce sync.Once
	restarted := make(chan struct{})
	var sentAfterKill []string
	var mu sync.Mutex
	results := make([]*ziggurat.Result, 3)
	var wg sync.WaitGroup
	fast := &ziggurat.PlayOptions{Backoff: ziggurat.Backoff{Initial: 50 * time.Millisecond, Maximum: 500 * time.Millisecond, Attempts: 200}}
	for i, handle := range handles {
		chooser := newRandomChooser(uint64(10 + i))
		choose := func(ctx context.Context, turn *ziggurat.Turn) (string, error) {
			move, _ := chooser.choose(ctx, turn)
			if turn.Ply == 8 {
				killOnce.Do(func() {
					server.Kill()
					go func() {
						time.Sleep(700 * time.Millisecond)
						server.Restart()
						close(restarted)
					}()
					mu.Lock()
					sentAfterKill = append(sentAfterKill, move)
					mu.Unlock()
				})
			}
			return move, nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if results[i], err = client.Play(ctx, handle, choose, fast); err != nil {
				t.Error(err)
			}
		}()
	}
	// A spectator follows the match through the restart: every event once, no gap.
	var seqs []uint64
	watchErr := client.Watch(ctx, match.GetMatchId(), &ziggurat.WatchOptions{Backoff: fast.Backoff}, func(event *pb.Event) error {
		seqs = append(seqs, event.GetSeq())
		return nil
	})
	wg.Wait()
	if watchErr != nil {
		t.Fatal(watchErr)
	}
	select {
	case <-restarted:
	default:
		t.Fatal("the server was never killed")
	}
	for i, seq := range seqs {
		if seq != uint64(i+1) {
			t.Fatalf("spectator saw seqs %v", seqs)
		}
	}
	if t.Failed() {
		return
	}
	record, _ := client.Record(ctx, match.GetMatchId())
	if got := record.GetMoves()[8].GetMove(); len(sentAfterKill) != 1 || got != sentAfterKill[0] {
		t.Fatalf("the move sent as the server died was %v, the record has %q", sentAfterKill, got)
	}
	checkFinished(t, ctx, server, client, match.GetMatchId(), results)
}

// A bot that connects (or reconnects) mid-turn reads its TurnStarted from the backlog: it is
// given what is left of the turn (measured on the server's clock), not the whole turn.
func TestTurnReadFromTheBacklogHasOnlyTheTimeLeft(t *testing.T) {
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	timed := &ziggurat.CreateOptions{TimeControl: &pb.TimeControl{PerMoveMs: 30000}, SeatAssignment: pb.SeatAssignment_SEAT_ASSIGNMENT_CHOSEN}
	match, err := client.CreateMatch(ctx, ziggurat.Pylos(), timed)
	if err != nil {
		t.Fatal(err)
	}
	first, err := client.Join(ctx, match.GetMatchId(), "first", 1)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := client.Join(ctx, match.GetMatchId(), "second", 2); err != nil { // seat 1's turn starts
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	var given, ran time.Duration
	asked := errors.New("asked")
	_, err = client.Play(ctx, first, func(_ context.Context, turn *ziggurat.Turn) (string, error) {
		given, ran = turn.TimeLeft, time.Since(before)
		return "", asked
	}, nil)
	if !errors.Is(err, asked) {
		t.Fatalf("Play: %v", err)
	}
	// At most 28 s is left after the 2 s sleep; at least what the turn had not yet run.
	if given < 26*time.Second || given > 28100*time.Millisecond || given < 30*time.Second-ran-100*time.Millisecond {
		t.Fatalf("the bot was given %v of a 30 s turn that had run about %v", given, ran)
	}
}
