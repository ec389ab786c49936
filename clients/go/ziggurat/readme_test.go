package ziggurat_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ziggurat-games/ziggurat/clients/go/ziggurat"
)

// readmeProgram writes the README's Go block that contains marker (each block is a whole
// program) into a fresh directory inside the module, so it builds against it, and returns
// that directory's name relative to the module.
func readmeProgram(t *testing.T, marker string) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	var found [][]byte
	for _, block := range blocks {
		if !strings.Contains(string(block[1]), "func main()") {
			t.Fatalf("a Go block of README.md is not a whole program:\n%s", block[1])
		}
		if strings.Contains(string(block[1]), marker) {
			found = append(found, block[1])
		}
	}
	if len(blocks) != 2 || len(found) != 1 {
		t.Fatalf("want two Go programs in README.md, one containing %q; found %d blocks, %d with it", marker, len(blocks), len(found))
	}
	dir, err := os.MkdirTemp("..", "readme-bot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), found[0], 0o644); err != nil {
		t.Fatal(err)
	}
	return "./" + filepath.Base(dir)
}

// The README's "smallest bot" is a whole program: it is compiled and played against a real
// server here, so the documented code cannot rot.
func TestReadmeSmallestBotPlaysAMatch(t *testing.T) {
	program := readmeProgram(t, "client.Join(ctx, os.Args[2]")
	server := startServer(t)
	client := dial(t, server.Address)
	ctx := testContext(t)
	match, err := client.CreateMatch(ctx, ziggurat.Pylos(), nil)
	if err != nil {
		t.Fatal(err)
	}
	opponent := make(chan error, 1)
	go func() {
		handle, err := client.Join(ctx, match.GetMatchId(), "opponent", 0)
		if err == nil {
			_, err = client.Play(ctx, handle, newRandomChooser(3).choose, nil)
		}
		opponent <- err
	}()
	run := exec.CommandContext(ctx, "go", "run", program, server.Address, match.GetMatchId())
	run.Dir = ".."
	out, err := run.CombinedOutput()
	if err != nil || !regexp.MustCompile(`rank [12]\n`).Match(out) {
		t.Fatalf("the README bot: %v\n%s", err, out)
	}
	if err := <-opponent; err != nil {
		t.Fatal(err)
	}
	server.verify(match.GetMatchId())
}

// The README's "any game by its name" program plays phantom tic-tac-toe (no helper in this
// package) from ListGames and the generic view alone, and the match verifies; a name the
// server does not list stops it with the names it does.
func TestReadmeAnyGameProgramPlaysPhantomTicTacToe(t *testing.T) {
	program := readmeProgram(t, "client.ListGames(ctx)")
	server := startServer(t)
	ctx := testContext(t)
	run := exec.CommandContext(ctx, "go", "run", program, server.Address, "phantom-ttt")
	run.Dir = ".."
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("the README program: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"phantom-ttt (Phantom tic-tac-toe): 2 to 2 seats, 0 options\n", "seat 1 sees ", "seat 2 sees "} {
		if !strings.Contains(text, want) {
			t.Fatalf("no %q in:\n%s", want, text)
		}
	}
	ranked := regexp.MustCompile(`seat [12] ranked [12]\n`).FindAllString(text, -1)
	created := regexp.MustCompile(`created match (\S+)\n`).FindStringSubmatch(text)
	if len(ranked) != 2 || created == nil {
		t.Fatalf("want a created match and both seats ranked:\n%s", text)
	}
	server.verify(created[1])

	run = exec.CommandContext(ctx, "go", "run", program, server.Address, "chess")
	run.Dir = ".."
	out, err = run.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown game "chess": this server hosts pylos, kabaleo, phantom-ttt`) {
		t.Fatalf("an unknown game: %v\n%s", err, out)
	}
}
