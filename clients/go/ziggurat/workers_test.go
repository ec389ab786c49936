package ziggurat_test

import (
	"bufio"
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
	pb "github.com/ziggurat-games/ziggurat/clients/go/zigguratv1"
)

// workers is `ziggurat serve --workers 2`: the public address and each worker's own address.
type workers struct {
	Address string
	Own     []string
}

func startWorkers(t *testing.T) workers {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(zigguratCommand(t), "serve", "--workers", "2", "--host", "127.0.0.1", "--port", "0",
		"--db", filepath.Join(dir, "z.db"), "--no-mdns", "--grace", "1")
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGKILL); _ = cmd.Wait() })
	ready := make(chan workers, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		var w workers
		for lines.Scan() {
			line := lines.Text()
			if rest, ok := strings.CutPrefix(line, "ziggurat listening on "); ok {
				w.Address = strings.TrimSpace(rest)
			}
			if _, ports, ok := strings.Cut(line, "own ports "); ok {
				for _, port := range strings.Split(strings.TrimSuffix(ports, ")"), ", ") {
					w.Own = append(w.Own, "127.0.0.1:"+port)
				}
				ready <- w
			}
		}
	}()
	select {
	case w := <-ready:
		return w
	case <-time.After(120 * time.Second):
		text, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		t.Fatalf("the workers did not start:\n%s", text)
	}
	return workers{}
}

// A match owned by worker 1, joined, played, watched and verified through worker 0: the
// client follows MATCH_ELSEWHERE and Match.server_address by itself.
func TestClientFollowsTheWorkerThatOwnsTheMatch(t *testing.T) {
	w := startWorkers(t)
	ctx := testContext(t)
	owner := dial(t, w.Own[1])
	created, err := owner.CreateMatch(ctx, ziggurat.Pylos(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if created.GetServerAddress() != w.Own[1] {
		t.Fatalf("server_address %q, want %q", created.GetServerAddress(), w.Own[1])
	}
	other := dial(t, w.Own[0])
	// The raw call through worker 0 is refused, naming the owner (what the client follows).
	_, err = other.Matches.JoinMatch(ctx, &pb.JoinMatchRequest{MatchId: created.GetMatchId(), PlayerName: "raw"})
	if ziggurat.ReasonOf(ziggurat.FromError(err)) != ziggurat.ReasonMatchElsewhere {
		t.Fatalf("raw JoinMatch through another worker: %v", err)
	}
	first, err := other.Join(ctx, created.GetMatchId(), "first", 0)
	if err != nil {
		t.Fatal(err)
	}
	if other.Route(created.GetMatchId()) != w.Own[1] {
		t.Fatalf("route %q, want %q", other.Route(created.GetMatchId()), w.Own[1])
	}
	public := dial(t, w.Address)
	second, err := public.Join(ctx, created.GetMatchId(), "second", 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(3))
	choose := func(_ context.Context, turn *ziggurat.Turn) (string, error) {
		return turn.LegalMoves[rng.Intn(len(turn.LegalMoves))], nil
	}
	done := make(chan error, 2)
	for _, seat := range []struct {
		client *ziggurat.Client
		handle ziggurat.Handle
	}{{other, first}, {public, second}} {
		go func() {
			_, err := seat.client.Play(ctx, seat.handle, choose, nil)
			done <- err
		}()
	}
	watcher := dial(t, w.Own[0])
	watched := 0
	if err := watcher.Watch(ctx, created.GetMatchId(), nil, func(*pb.Event) error { watched++; return nil }); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	record, err := other.Record(ctx, created.GetMatchId())
	if err != nil {
		t.Fatal(err)
	}
	if len(record.GetMoves()) == 0 || watched < len(record.GetMoves()) {
		t.Fatalf("%d moves recorded, %d events watched", len(record.GetMoves()), watched)
	}
}
