package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// CompareOptions say what `bdp-bench compare` runs: one scenario on the
// base revision and on the working tree, alternately.
type CompareOptions struct {
	Base     string   // git revision to compare against
	Scenario string   // a bdp-bench scenario, e.g. "vdp"
	Args     []string // the scenario's flags, given to both sides as they are
	Rounds   int      // runs of each side
	Repo     string   // the working tree; its bin/bdp and bin/bdp-bench are measured as built
	Progress io.Writer
	Out      io.Writer // the table of medians
}

// Compare builds the base revision in a temporary directory outside the
// repository and runs the scenario there and in the working tree in turn,
// each from its own tree's root as `make bench-<scenario>` does (so
// `-bdp bin/bdp`, the default, is that side's binary). The order flips each
// round (base, head; head, base; …) so neither side always runs on the
// machine the other has just warmed or heated.
func Compare(ctx context.Context, o CompareOptions) (map[string]any, error) {
	if o.Rounds < 1 {
		return nil, fmt.Errorf("rounds %d: at least 1", o.Rounds)
	}
	head, base, err := bothSides(ctx, o.Repo, o.Base, o.Progress)
	if err != nil {
		return nil, err
	}
	defer base.remove()
	headCommit, dirty, err := headState(ctx, head)
	if err != nil {
		return nil, err
	}
	dirs := [2]string{base.dir, head}
	names := [2]string{"base " + o.Base, "head"}
	var runs [2][]map[string]any
	for round := range o.Rounds {
		for _, side := range roundOrder(round) {
			fmt.Fprintf(o.Progress, "compare: round %d of %d, %s: bdp-bench %s %s\n", round+1, o.Rounds,
				names[side], o.Scenario, strings.Join(o.Args, " "))
			res, err := runScenario(ctx, dirs[side], o.Scenario, o.Args, o.Progress)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round+1, names[side], err)
			}
			runs[side] = append(runs[side], res)
		}
	}
	c := CompareRuns(runs[0], runs[1])
	if err := c.WriteTable(o.Out); err != nil {
		return nil, err
	}
	return map[string]any{
		"scenario": o.Scenario, "args": o.Args, "base": o.Base, "base_commit": base.commit,
		"head_commit": headCommit, "head_uncommitted_changes": dirty, "rounds": o.Rounds,
		"base_median": c.Base, "head_median": c.Head, "ratio": c.Ratio,
	}, nil
}

// roundOrder is the sides' order in a round: 0 base, 1 head.
func roundOrder(round int) [2]int {
	if round%2 == 0 {
		return [2]int{0, 1}
	}
	return [2]int{1, 0}
}

// baseTree is the base revision's source with its binaries built.
type baseTree struct {
	tmp    string // the temporary directory, removed at the end
	dir    string // the source tree inside it
	commit string
}

func (b baseTree) remove() { os.RemoveAll(b.tmp) }

// bothSides answers the working tree's root (repo, made absolute) and the
// base revision built beside it; the caller removes the base.
func bothSides(ctx context.Context, repo, rev string, progress io.Writer) (string, baseTree, error) {
	head, err := filepath.Abs(repo)
	if err != nil {
		return "", baseTree{}, err
	}
	base, err := buildBase(ctx, head, rev, progress)
	return head, base, err
}

// buildBase extracts the base revision with git archive (no worktree to
// register in the repository's shared .git, none left behind when the
// comparison is interrupted) and builds bin/bdp and bin/bdp-bench in it.
// The Swagger UI assets (http/ui/dist, not committed) are left out: they
// are embedded files, which no scenario measures.
func buildBase(ctx context.Context, repo, rev string, progress io.Writer) (_ baseTree, err error) {
	out, err := command(ctx, repo, "git", "rev-parse", "--verify", "--end-of-options", rev+"^{commit}").Output()
	if err != nil {
		return baseTree{}, fmt.Errorf("base revision %q: %w", rev, exitDetail(err))
	}
	b := baseTree{commit: strings.TrimSpace(string(out))}
	if b.tmp, err = os.MkdirTemp("", "bdp-compare-"); err != nil {
		return baseTree{}, err
	}
	defer func() {
		if err != nil {
			b.remove()
		}
	}()
	b.dir = filepath.Join(b.tmp, "base")
	fmt.Fprintf(progress, "compare: building %s (%.12s) in %s\n", rev, b.commit, b.dir)
	archive := filepath.Join(b.tmp, "base.tar")
	gitArchive := command(ctx, repo, "git", "archive", "--format=tar", "-o", archive, b.commit)
	gitArchive.Stderr = progress
	if err := gitArchive.Run(); err != nil {
		return baseTree{}, fmt.Errorf("git archive %s: %w", rev, err)
	}
	if err := os.Mkdir(b.dir, 0o755); err != nil {
		return baseTree{}, err
	}
	untar := command(ctx, b.dir, "tar", "-xf", archive)
	untar.Stderr = progress
	if err := untar.Run(); err != nil {
		return baseTree{}, fmt.Errorf("unpacking %s: %w", rev, err)
	}
	for _, cmd := range []string{"bdp", "bdp-bench"} {
		build := command(ctx, b.dir, "go", "build", "-o", filepath.Join("bin", cmd), "./cmd/"+cmd)
		build.Stdout, build.Stderr = progress, progress
		if err := build.Run(); err != nil {
			return baseTree{}, fmt.Errorf("building %s of %s: %w", cmd, rev, err)
		}
	}
	return b, nil
}

// headState is the working tree's commit and whether files differ from it,
// so a comparison's JSON says what "head" was.
func headState(ctx context.Context, repo string) (commit string, dirty bool, err error) {
	out, err := command(ctx, repo, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false, fmt.Errorf("git rev-parse HEAD: %w", exitDetail(err))
	}
	status, err := command(ctx, repo, "git", "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return "", false, fmt.Errorf("git status: %w", exitDetail(err))
	}
	return strings.TrimSpace(string(out)), len(bytes.TrimSpace(status)) > 0, nil
}

// runScenario runs dir/bin/bdp-bench from dir. Its stderr (progress) and
// stdout go to progress as they come; the last line of stdout is the result.
func runScenario(ctx context.Context, dir, scenario string, args []string, progress io.Writer) (map[string]any, error) {
	var stdout bytes.Buffer
	cmd := command(ctx, dir, filepath.Join(dir, "bin", "bdp-bench"), append([]string{scenario}, args...)...)
	cmd.Stdout = io.MultiWriter(&stdout, progress)
	cmd.Stderr = progress
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bdp-bench %s: %w", scenario, err)
	}
	return LastJSONObject(stdout.Bytes())
}

// command runs in dir. When ctx ends it asks with SIGINT, as Ctrl-C would:
// a scenario then stops the bdp serve and PostgreSQL it started, which a
// SIGKILL would leave running.
func command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// exitDetail adds what a failed command said on stderr (collected by
// Output) to its error.
func exitDetail(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(exit.Stderr))
	}
	return err
}
