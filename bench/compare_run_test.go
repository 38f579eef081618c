package bench

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBench is cmd/bdp-bench of a tiny module: it runs bin/bdp from the
// directory it was started in, as the real scenarios' -bdp default does,
// notes the figure bin/bdp prints in the file its -log flag names (so the
// test sees the sides' order) and reports it, after a progress line.
const fakeBench = `package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

func main() {
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	log := fs.String("log", "", "")
	fs.Parse(os.Args[2:])
	out, err := exec.Command("bin/bdp").Output()
	if err != nil {
		panic(err)
	}
	figure := strings.TrimSpace(string(out))
	f, err := os.OpenFile(*log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		panic(err)
	}
	fmt.Fprintln(f, figure)
	f.Close()
	fmt.Println("loaded")
	fmt.Printf("{\"scenario\":%q,\"latency_ms\":%s}\n", os.Args[1], figure)
}
`

func fakeBDP(figure string) string {
	return "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(" + figure + ") }\n"
}

// TestCompareRunsBothTreesAlternately builds a base commit and a working
// tree whose bin/bdp differ and checks that each side's runs measured its
// own binaries, from its own root, in alternating order.
func TestCompareRunsBothTreesAlternately(t *testing.T) {
	repo := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		p := filepath.Join(repo, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	write("go.mod", "module example.com/fake\n\ngo 1.22\n")
	write("cmd/bdp-bench/main.go", fakeBench)
	write("cmd/bdp/main.go", fakeBDP("40"))
	run("git", "init", "-q")
	run("git", "add", ".")
	run("git", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
	// The working tree, uncommitted, is what make build leaves in bin/.
	write("cmd/bdp/main.go", fakeBDP("30"))
	run("go", "build", "-o", "bin/bdp", "./cmd/bdp")
	run("go", "build", "-o", "bin/bdp-bench", "./cmd/bdp-bench")

	order := filepath.Join(t.TempDir(), "order")
	// Compare's temporary directory goes here, to be checked afterwards.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var table strings.Builder
	got, err := Compare(context.Background(), CompareOptions{Base: "HEAD", Scenario: "vdp",
		Args: []string{"-log", order}, Rounds: 3, Repo: repo, Progress: io.Discard, Out: &table})
	if err != nil {
		t.Fatal(err)
	}
	ran, err := os.ReadFile(order)
	if err != nil {
		t.Fatal(err)
	}
	if want := "40\n30\n30\n40\n40\n30\n"; string(ran) != want {
		t.Errorf("sides ran in the order %q, want base, head; head, base; base, head: %q", ran, want)
	}
	for key, want := range map[string]any{"scenario": "vdp", "base": "HEAD", "rounds": 3,
		"head_uncommitted_changes": true} {
		if got[key] != want {
			t.Errorf("%s: %v, want %v", key, got[key], want)
		}
	}
	for key, want := range map[string]float64{"base_median": 40, "head_median": 30, "ratio": 0.75} {
		if m := got[key].(map[string]float64); m["latency_ms"] != want {
			t.Errorf("%s: %v, want latency_ms %v", key, m, want)
		}
	}
	if !strings.Contains(table.String(), "latency_ms") {
		t.Errorf("the table lacks the figure:\n%s", table.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the base tree is left behind in %s: %v", tmp, left)
	}
}
