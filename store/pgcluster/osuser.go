package pgcluster

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// serverUserName is the system user the Debian packages create for
// PostgreSQL; as root, the server runs as this user because postgres
// refuses to run as root.
const serverUserName = "postgres"

// serverUser is the OS user the server runs as when that is not the current
// user. A nil *serverUser means the current user, and its methods then do
// nothing.
type serverUser struct {
	name     string
	uid, gid int
	groups   []int // all its groups, the primary one included
	home     string
}

// lookupServerUser returns nil unless the current process runs as root.
func lookupServerUser() (*serverUser, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(serverUserName)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: PostgreSQL refuses to run as root and there is no %q system user to run it as; install the Debian package \"postgresql\", which creates it, or run bdp as a non-root user: %w", serverUserName, err)
	}
	s := &serverUser{name: u.Username, home: u.HomeDir}
	if s.uid, err = strconv.Atoi(u.Uid); err != nil {
		return nil, fmt.Errorf("pgcluster: uid of %s: %w", u.Username, err)
	}
	if s.gid, err = strconv.Atoi(u.Gid); err != nil {
		return nil, fmt.Errorf("pgcluster: gid of %s: %w", u.Username, err)
	}
	s.groups = []int{s.gid}
	gids, _ := u.GroupIds() // without them, the primary group still works
	for _, g := range gids {
		if n, err := strconv.Atoi(g); err == nil && !slices.Contains(s.groups, n) {
			s.groups = append(s.groups, n)
		}
	}
	return s, nil
}

func (u *serverUser) chown(path string) error {
	if u == nil {
		return nil
	}
	if err := os.Chown(path, u.uid, u.gid); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

// checkTraversable fails when the server user cannot reach dir, which would
// otherwise surface as an obscure "permission denied" from initdb or the
// server. It reads mode bits only: access control lists are not consulted.
func (u *serverUser) checkTraversable(dir string) error {
	if u == nil {
		return nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if !u.canSearch(fi) {
			return fmt.Errorf("pgcluster: the PostgreSQL server runs as user %q, which cannot enter directory %s (mode %v); put the data directory elsewhere or make %s traversable (chmod o+x)",
				u.name, d, fi.Mode().Perm(), d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func (u *serverUser) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true // cannot tell; PostgreSQL will report it if not
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == u.uid:
		return perm&0o100 != 0
	case slices.Contains(u.groups, int(st.Gid)):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// command prepares a PostgreSQL program to run as the server user, with a
// minimal environment: the server inherits it for its whole life, and bdp's
// environment may hold secrets, or PG* variables that would redirect the
// programs.
func (c *Cluster) command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	// The current directory may be one the server user cannot enter.
	cmd.Dir = "/"
	// initdb works through postgres child processes; a cancelled context
	// must stop them too, not leave them writing into the data directory.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// The server is detached from our pipes, so this only guards against a
	// stuck program after the context ends.
	cmd.WaitDelay = 5 * time.Second

	cmd.Env = []string{} // not nil, which would mean "inherit everything"
	keep := []string{"PATH", "TZ"}
	if c.user == nil {
		keep = append(keep, "HOME", "USER", "LOGNAME")
	}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); slices.Contains(keep, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if c.user != nil {
		cmd.Env = append(cmd.Env, "HOME="+c.user.home, "USER="+c.user.name, "LOGNAME="+c.user.name)
		groups := make([]uint32, len(c.user.groups))
		for i, g := range c.user.groups {
			groups[i] = uint32(g)
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{
			Uid: uint32(c.user.uid), Gid: uint32(c.user.gid), Groups: groups,
		}
	}
	return cmd
}
