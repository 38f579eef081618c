package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CompareGoOptions say what `bdp-bench compare-go` runs: Go benchmarks of
// one package on the base revision and on the working tree.
type CompareGoOptions struct {
	Base      string // git revision to compare against
	Package   string // one package, e.g. ./pipeline
	Bench     string // -bench regexp
	Count     int    // runs of each side
	Benchtime string // go test -benchtime; "" is go test's default (1s)
	Repo      string // the working tree
	Benchstat string // the benchstat command
	Progress  io.Writer
	Out       io.Writer // benchstat's table
}

// CompareGo builds the package's test binary on both sides once, runs it
// Count times on each side alternately (one run of every benchmark at a
// time, so a slow minute on the machine hits both sides alike rather than
// all of one side's samples) and hands the two outputs to benchstat.
func CompareGo(ctx context.Context, o CompareGoOptions) (map[string]any, error) {
	if o.Count < 1 {
		return nil, fmt.Errorf("count %d: at least 1", o.Count)
	}
	head, base, err := bothSides(ctx, o.Repo, o.Base, o.Progress)
	if err != nil {
		return nil, err
	}
	defer base.remove()
	dirs := [2]string{base.dir, head}
	labels := [2]string{"base", "head"}
	var bins, pkgDirs, outputs [2]string
	var files [2]*os.File
	for side := range dirs {
		if bins[side], pkgDirs[side], err = buildTestBinary(ctx, dirs[side], o.Package, base.tmp, labels[side], o.Progress); err != nil {
			return nil, err
		}
		outputs[side] = filepath.Join(base.tmp, labels[side]+".txt")
		if files[side], err = os.Create(outputs[side]); err != nil {
			return nil, err
		}
		defer files[side].Close()
	}
	for run := range o.Count {
		for _, side := range roundOrder(run) {
			fmt.Fprintf(o.Progress, "compare-go: run %d of %d, %s: %s -bench %q\n", run+1, o.Count, labels[side], o.Package, o.Bench)
			// The test binary runs in its package's directory, as go test runs it.
			args := []string{"-test.run", "^$", "-test.bench", o.Bench, "-test.benchmem", "-test.count", "1"}
			if o.Benchtime != "" {
				args = append(args, "-test.benchtime", o.Benchtime)
			}
			cmd := command(ctx, pkgDirs[side], bins[side], args...)
			cmd.Stdout = io.MultiWriter(files[side], o.Progress)
			cmd.Stderr = o.Progress
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("run %d, %s benchmarks: %w", run+1, labels[side], err)
			}
		}
	}
	stat := command(ctx, head, o.Benchstat, "base="+outputs[0], "head="+outputs[1])
	stat.Stdout, stat.Stderr = o.Out, o.Progress
	if err := stat.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Benchstat, err)
	}
	headCommit, dirty, err := headState(ctx, head)
	if err != nil {
		return nil, err
	}
	return map[string]any{"package": o.Package, "bench": o.Bench, "count": o.Count, "benchtime": o.Benchtime, "base": o.Base,
		"base_commit": base.commit, "head_commit": headCommit, "head_uncommitted_changes": dirty}, nil
}

// buildTestBinary compiles pkg's tests in the tree dir into tmp and says
// where the package lives there. A package the base revision lacks fails
// here, before any benchmark ran.
func buildTestBinary(ctx context.Context, dir, pkg, tmp, label string, progress io.Writer) (bin, pkgDir string, err error) {
	out, err := command(ctx, dir, "go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		return "", "", fmt.Errorf("%s: go list %s: %w", label, pkg, exitDetail(err))
	}
	if lines := strings.Fields(string(out)); len(lines) != 1 {
		return "", "", fmt.Errorf("%s: %s names %d packages; compare one at a time", label, pkg, len(lines))
	}
	bin = filepath.Join(tmp, label+".test")
	build := command(ctx, dir, "go", "test", "-c", "-o", bin, pkg)
	build.Stdout, build.Stderr = progress, progress
	if err := build.Run(); err != nil {
		return "", "", fmt.Errorf("%s: go test -c %s: %w", label, pkg, err)
	}
	return bin, strings.TrimSpace(string(out)), nil
}
