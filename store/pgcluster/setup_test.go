package pgcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These tests fail before initdb would run, so they need no server.

func TestMissingBinaries(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]os.FileMode
	}{
		{"empty dir", nil},
		{"only initdb", map[string]os.FileMode{"initdb": 0o755}},
		{"not executable", map[string]os.FileMode{"initdb": 0o644, "pg_ctl": 0o644}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			binDir := t.TempDir()
			for name, mode := range tt.files {
				writeFile(t, filepath.Join(binDir, name), "#!/bin/sh\n", mode)
			}
			dataDir := filepath.Join(t.TempDir(), "data")
			_, err := Start(context.Background(), Options{Dir: dataDir, binDirs: []string{binDir}})
			if err == nil || !strings.Contains(err.Error(), `"postgresql"`) {
				t.Fatalf("error = %v, want one naming the postgresql package", err)
			}
			if _, err := os.Stat(dataDir); err == nil {
				t.Error("data directory created although Start failed early")
			}
		})
	}
}

func TestFindBinariesPrefersMatchingThenNewestVersion(t *testing.T) {
	base := t.TempDir()
	for _, v := range []string{"9.6", "15", "10"} {
		dir := filepath.Join(base, v, "bin")
		writeFile(t, filepath.Join(dir, "initdb"), "#!/bin/sh\n", 0o755)
		writeFile(t, filepath.Join(dir, "pg_ctl"), "#!/bin/sh\necho 'pg_ctl (PostgreSQL) "+v+".3 (Debian)'\n", 0o755)
	}
	dirs := versionDirs(filepath.Join(base, "*", "bin"))

	tests := []struct {
		clusterVersion string
		wantDir        string // empty: want an error naming the package
	}{
		{"", "15"},
		{"10", "10"},
		{"9.6", "9.6"},
		{"16", ""},
	}
	for _, tt := range tests {
		t.Run("cluster "+tt.clusterVersion, func(t *testing.T) {
			b, err := findBinaries(context.Background(), dirs, tt.clusterVersion)
			if tt.wantDir == "" {
				if err == nil || !strings.Contains(err.Error(), `"postgresql-16"`) {
					t.Fatalf("error = %v, want one naming postgresql-16", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(base, tt.wantDir, "bin", "pg_ctl"); b.pgCtl != want {
				t.Errorf("pg_ctl = %s, want %s", b.pgCtl, want)
			}
		})
	}
}

func TestUntraversableParentIsReported(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the server to another user")
	}
	base, err := os.MkdirTemp("", "bdp-pgcluster-test-") // mode 0700, owned by root
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	_, err = Start(context.Background(), Options{Dir: filepath.Join(base, "data"), Throwaway: true})
	if err == nil || !strings.Contains(err.Error(), "cannot enter directory "+base) {
		t.Fatalf("error = %v, want one naming %s", err, base)
	}
}

func TestNonEmptyDirWithoutClusterIsRefused(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "notes.txt")
	writeFile(t, keep, "not a cluster", 0o644)
	_, err := Start(context.Background(), Options{Dir: dir, Throwaway: true})
	if err == nil || !strings.Contains(err.Error(), "is not empty") {
		t.Fatalf("error = %v, want one saying the directory is not empty", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("existing file touched: %v", err)
	}
}
