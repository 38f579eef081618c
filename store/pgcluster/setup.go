package pgcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

const (
	passwordFile = "bdp_password"
	// debianBinGlob is where Debian and Ubuntu install the server binaries,
	// one directory per major version, none of them on PATH.
	debianBinGlob = "/usr/lib/postgresql/*/bin"
)

// binaries are the PostgreSQL programs Start runs. They always come from
// one directory, so initdb and pg_ctl (and the postgres they run) agree on
// the version.
type binaries struct {
	initdb, pgCtl string
}

// findBinaries returns the first directory of dirs (by default PATH, then
// the Debian directories, newest version first) holding both initdb and
// pg_ctl. For an existing cluster (wantVersion is its PG_VERSION) it skips
// other major versions, which cannot run the cluster.
func findBinaries(ctx context.Context, dirs []string, wantVersion string) (binaries, error) {
	if dirs == nil {
		dirs = append(pathDirs(), versionDirs(debianBinGlob)...)
	}
	var mismatched []string
	for _, dir := range dirs {
		b := binaries{initdb: filepath.Join(dir, "initdb"), pgCtl: filepath.Join(dir, "pg_ctl")}
		if !isExecutable(b.initdb) || !isExecutable(b.pgCtl) {
			continue
		}
		if wantVersion == "" {
			return b, nil
		}
		version, err := b.version(ctx)
		if err != nil {
			return binaries{}, err
		}
		if sameMajor(version, wantVersion) {
			return b, nil
		}
		mismatched = append(mismatched, fmt.Sprintf("%s (%s)", dir, version))
	}
	if len(mismatched) > 0 {
		return binaries{}, fmt.Errorf("pgcluster: the cluster was created by PostgreSQL %s but only other versions are installed: %s; install the Debian package \"postgresql-%s\" or upgrade the cluster with pg_upgrade",
			wantVersion, strings.Join(mismatched, ", "), wantVersion)
	}
	return binaries{}, fmt.Errorf("pgcluster: PostgreSQL server programs initdb and pg_ctl not found on PATH or in %s; install the Debian package \"postgresql\" (apt-get install postgresql)", debianBinGlob)
}

// pathDirs returns the absolute PATH entries. Relative ones are skipped for
// the reason exec.LookPath refuses them: they would run whatever program
// sits in the current directory.
func pathDirs() []string {
	var dirs []string
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(dir) {
			dirs = append(dirs, dir)
		}
	}
	return dirs
}

// versionDirs returns the matches of pattern, whose parent directory names
// are versions ("15", "9.6"), newest first.
func versionDirs(pattern string) []string {
	dirs, _ := filepath.Glob(pattern) // the only error is a malformed pattern
	slices.SortStableFunc(dirs, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	return dirs
}

// compareVersions compares dotted numeric versions, so that "10" sorts
// after "9.6". Non-numeric parts sort before any number.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		if c := versionPart(as, i) - versionPart(bs, i); c != 0 {
			return max(-1, min(1, c))
		}
	}
	return 0
}

func versionPart(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	n, err := strconv.Atoi(parts[i])
	if err != nil {
		return -1
	}
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// version returns the version pg_ctl reports, such as "15.8".
func (b binaries) version(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, b.pgCtl, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("pgcluster: %s --version: %w", b.pgCtl, err)
	}
	// "pg_ctl (PostgreSQL) 15.8 (Debian 15.8-1.pgdg120+1)"
	_, after, ok := strings.Cut(string(out), "(PostgreSQL) ")
	if !ok {
		return "", fmt.Errorf("pgcluster: unexpected %s --version output %q", b.pgCtl, out)
	}
	version, _, _ := strings.Cut(strings.TrimSpace(after), " ")
	return version, nil
}

// sameMajor reports whether a server version such as "15.8", "16beta1" or
// "9.6.24" belongs to a PG_VERSION major version such as "15" or "9.6".
func sameMajor(version, major string) bool {
	rest, ok := strings.CutPrefix(version, major)
	return ok && (rest == "" || rest[0] < '0' || rest[0] > '9')
}

// clusterVersion returns the PG_VERSION of the cluster in dir, or "" when
// dir holds no cluster.
func clusterVersion(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "PG_VERSION"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("pgcluster: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// prepareDir creates the data directory with the 0700 mode PostgreSQL
// demands, and hands it to the server user. An existing directory must be
// empty, as initdb requires, which also makes emptyDir safe.
func (c *Cluster) prepareDir() error {
	if err := mkdirAll(c.dir); err != nil {
		return err
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("pgcluster: %s holds no PostgreSQL cluster (no PG_VERSION) but is not empty; use an empty or new directory", c.dir)
	}
	if err := c.user.chown(c.dir); err != nil {
		return err
	}
	return c.user.checkTraversable(filepath.Dir(c.dir))
}

// emptyDir removes what a failed initialization left in the data
// directory. Errors are ignored: the initialization error matters more,
// and a leftover makes the next Start fail clearly in prepareDir.
func (c *Cluster) emptyDir() {
	entries, _ := os.ReadDir(c.dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(c.dir, e.Name()))
	}
}

// mkdirAll is os.MkdirAll with explicit modes regardless of the umask:
// 0700 for dir, 0755 for the parents it creates so the server user can
// traverse them.
func mkdirAll(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("pgcluster: %w", err)
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		mode := fs.FileMode(0o755)
		if i == 0 {
			mode = 0o700
		}
		if err := os.Mkdir(missing[i], mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if err := os.Chmod(missing[i], mode); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
	}
	return nil
}

// initdb creates the cluster with a new random password for the bdp
// superuser, saves that password in the data directory for later starts,
// and appends bdp's settings to postgresql.conf.
func (c *Cluster) initdb(ctx context.Context, throwaway bool) error {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("pgcluster: generate password: %w", err)
	}
	password := hex.EncodeToString(secret)

	// initdb wants an empty data directory, so the password reaches it
	// through a file elsewhere; as root, beside the data directory, which
	// is known to be reachable by the server user, unlike root's TMPDIR.
	tmpDir := os.TempDir()
	if c.user != nil {
		tmpDir = filepath.Dir(c.dir)
	}
	pwfile, err := os.CreateTemp(tmpDir, ".bdp-initdb-pw-*")
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	defer os.Remove(pwfile.Name())
	_, err = pwfile.WriteString(password + "\n")
	if closeErr := pwfile.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = c.user.chown(pwfile.Name())
	}
	if err != nil {
		return fmt.Errorf("pgcluster: write initdb password file: %w", err)
	}

	args := []string{
		"-D", c.dir,
		"--auth=scram-sha-256",
		"--username=" + superuser,
		"--pwfile=" + pwfile.Name(),
		"--encoding=UTF8",
		// Fixed rather than inherited, so the cluster does not depend on the
		// environment bdp first ran in; C.UTF-8 sorts by code point, which
		// glibc upgrades do not change, so indexes stay valid.
		"--locale=C.UTF-8",
	}
	if throwaway {
		args = append(args, "--no-sync")
	}
	c.log.Info("creating PostgreSQL cluster", "dir", c.dir, "initdb", c.bin.initdb)
	if err := c.run(ctx, c.bin.initdb, args...); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := c.writeOwnedFile(filepath.Join(c.dir, passwordFile), password+"\n"); err != nil {
		return err
	}
	return appendConfig(filepath.Join(c.dir, "postgresql.conf"), throwaway)
}

func appendConfig(path string, throwaway bool) error {
	conf := `
# Added by bdp (store/pgcluster).
listen_addresses = '127.0.0.1'
# No Unix socket: its default directory may not be writable, and TCP on
# loopback with a password is all bdp uses.
unix_socket_directories = ''
max_connections = 200
# The write path's index pages of the current week must stay in memory:
# with the default 128MB, 10,000 live datapoints push PostgreSQL into
# writing pages out itself and commits slow down several times over
# (bdp-bench vdp). Shared memory is only touched as it fills.
shared_buffers = '1GB'
`
	if throwaway {
		conf += `# Throwaway test cluster: speed over crash safety.
fsync = off
synchronous_commit = off
full_page_writes = off
`
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	_, err = f.WriteString(conf)
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("pgcluster: append to postgresql.conf: %w", err)
	}
	return nil
}

// writeOwnedFile writes a file only the server user can read.
func (c *Cluster) writeOwnedFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return c.user.chown(path)
}

func readPassword(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, passwordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("pgcluster: the cluster in %s has no %s file: it was not created by bdp, or its creation was interrupted; remove the directory to start over: %w", dir, passwordFile, err)
	}
	if err != nil {
		return "", fmt.Errorf("pgcluster: %w", err)
	}
	password := strings.TrimSpace(string(data))
	if password == "" {
		return "", fmt.Errorf("pgcluster: %s in %s is empty", passwordFile, dir)
	}
	return password, nil
}
