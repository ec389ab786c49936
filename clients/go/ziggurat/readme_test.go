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

// The README's "smallest bot" is a whole program: it is compiled and played against a real
// server here, so the documented code cannot rot.
func TestReadmeSmallestBotPlaysAMatch(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) != 1 || !strings.Contains(string(blocks[0][1]), "func main()") {
		t.Fatalf("want one complete Go program in README.md, found %d blocks", len(blocks))
	}
	dir, err := os.MkdirTemp("..", "readme-bot-") // inside the module, so it builds against it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), blocks[0][1], 0o644); err != nil {
		t.Fatal(err)
	}
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
	run := exec.CommandContext(ctx, "go", "run", "./"+filepath.Base(dir), server.Address, match.GetMatchId())
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
