package ziggurat_test

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
)

// testServer is a real `ziggurat serve` subprocess on a loopback port with its own database
// file: $ZIGGURAT, or the repository's .venv/bin/ziggurat.
type testServer struct {
	t       *testing.T
	dir     string
	cmd     *exec.Cmd
	Address string
	extra   []string // more `serve` arguments (e.g. --tls-cert)
}

func zigguratCommand(t *testing.T) string {
	if path := os.Getenv("ZIGGURAT"); path != "" {
		return path
	}
	path, err := filepath.Abs("../../../.venv/bin/ziggurat")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

func startServer(t *testing.T, extra ...string) *testServer {
	t.Helper()
	s := &testServer{t: t, dir: t.TempDir(), extra: extra}
	s.start("0")
	t.Cleanup(s.Kill)
	return s
}

func (s *testServer) start(port string) {
	s.t.Helper()
	s.launch(port, filepath.Join(s.dir, "z.db"))
}

// startOn serves an existing database (e.g. a tournament's) on a free port.
func (s *testServer) startOn(db string) {
	s.t.Helper()
	s.launch("0", db)
}

func (s *testServer) launch(port, db string) {
	s.t.Helper()
	args := append([]string{"serve", "--host", "127.0.0.1", "--port", port, "--db", db, "--no-mdns"}, s.extra...)
	cmd := exec.Command(zigguratCommand(s.t), args...)
	stderr, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	found := make(chan string, 1)
	go func() {
		for lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), "ziggurat listening on "); ok {
				found <- strings.TrimSpace(rest)
			}
		}
	}()
	select {
	case address := <-found:
		s.Address = address
		s.cmd = cmd
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		s.t.Fatalf("server did not start:\n%s", log)
	}
}

// Kill ends the server with SIGKILL (no chance to flush or say goodbye).
func (s *testServer) Kill() {
	if s.cmd != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
}

// Restart starts the server again on the same database and the same port.
func (s *testServer) Restart() {
	s.t.Helper()
	_, port, _ := strings.Cut(s.Address, ":")
	s.start(port)
}

// verify runs `ziggurat verify`, the independent check of a finished match's record.
func (s *testServer) verify(matchID string) {
	s.t.Helper()
	out, err := exec.Command(zigguratCommand(s.t), "verify", matchID, "--server", s.Address).CombinedOutput()
	if err != nil {
		s.t.Fatalf("ziggurat verify %s: %v\n%s", matchID, err, out)
	}
}

func dial(t *testing.T, address string) *ziggurat.Client {
	t.Helper()
	client, err := ziggurat.Dial(address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// randomChooser is a seeded random bot that records the plies it was asked about.
type randomChooser struct {
	mu    sync.Mutex
	rng   *rand.Rand
	asked []uint32
}

func newRandomChooser(seed uint64) *randomChooser {
	return &randomChooser{rng: rand.New(rand.NewPCG(seed, 7))}
}

func (r *randomChooser) choose(_ context.Context, turn *ziggurat.Turn) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, turn.Ply)
	return turn.LegalMoves[r.rng.IntN(len(turn.LegalMoves))], nil
}
