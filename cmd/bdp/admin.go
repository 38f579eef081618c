package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/fault"
	bdphttp "github.com/openbdp/bdp/http"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
)

const adminUsage = `Usage:
  bdp admin create-company --name NAME --admin-email EMAIL [--first-name F] [--last-name L] [--password-stdin]
  bdp admin reset-password --email EMAIL [--password-stdin]
  bdp admin project-settings --project ID [--setpoint-writing on|off] [--setpoint-max-priority N]
                             [--autosampling-n N] [--units-system ID] [--currency-system ID]
` + adminStorageUsage + `
They work on the database bdp serve uses (BDP_DATABASE_URL, or the managed
cluster under BDP_DATA_DIR), whether or not bdp serve is running. The
password is read from the first line of standard input with
--password-stdin; otherwise one is generated and printed once.
project-settings changes the settings given (as PUT
/operator/projects/ID/settings does: --setpoint-writing on lets the
project's setpoints and controls apps write) and prints them all.
storage prints the observations and bytes on disk in the head (rows) and
sealed (compressed chunks); storage seal seals every closed week that is
due now, at full speed; storage unseal moves sealed weeks back into rows.
`

// firstCompanyHint is what bdp serve logs while there is no company.
const firstCompanyHint = "bdp admin create-company --name NAME --admin-email EMAIL"

// runAdmin runs `bdp admin <command>`; out receives what the operator
// must see (a generated password), in receives --password-stdin.
func runAdmin(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	if len(args) == 0 {
		return usageError{adminUsage}
	}
	switch args[0] {
	case "create-company":
		return adminCreateCompany(ctx, args[1:], in, out)
	case "reset-password":
		return adminResetPassword(ctx, args[1:], in, out)
	case "project-settings":
		return adminProjectSettings(ctx, args[1:], out)
	case "storage":
		return adminStorage(ctx, args[1:], out)
	case "help", "-h", "--help":
		fmt.Fprint(out, adminUsage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown admin command %q\n\n%s", args[0], adminUsage)}
}

// usageError is a command line mistake: bdp prints it and exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func adminCreateCompany(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("create-company", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	name := fs.String("name", "", "company name")
	email := fs.String("admin-email", "", "email of the company's first user, its admin")
	first := fs.String("first-name", "Admin", "the admin's first name")
	last := fs.String("last-name", "", "the admin's last name (default: the company name)")
	fromStdin := fs.Bool("password-stdin", false, "read the admin's password from standard input")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *name == "" || *email == "" {
		return usageError{"create-company needs --name and --admin-email\n\n" + adminUsage}
	}
	if *last == "" {
		*last = *name
	}
	password, generated, err := adminPassword(*fromStdin, in)
	if err != nil {
		return err
	}
	return withAdminStore(ctx, func(st *store.Store, hasher *auth.Hasher) error {
		co, u, err := bdphttp.CreateCompany(ctx, st, hasher, *name, bdphttp.CompanyAdmin{
			FirstName: *first, LastName: *last, Email: *email, Password: password})
		if err != nil {
			return clientError(err)
		}
		fmt.Fprintf(out, "created company %q (id %d) with its admin %s (user %d)\n", co.Name, co.ID, u.Email, u.ID)
		printPassword(out, generated, u.Email, password)
		return nil
	})
}

func adminResetPassword(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("reset-password", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("email", "", "email of the user")
	fromStdin := fs.Bool("password-stdin", false, "read the new password from standard input")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *email == "" {
		return usageError{"reset-password needs --email\n\n" + adminUsage}
	}
	password, generated, err := adminPassword(*fromStdin, in)
	if err != nil {
		return err
	}
	return withAdminStore(ctx, func(st *store.Store, hasher *auth.Hasher) error {
		u, err := bdphttp.ResetPassword(ctx, st, hasher, *email, password)
		if err != nil {
			return clientError(err)
		}
		fmt.Fprintf(out, "new password set for %s (user %d)\n", u.Email, u.ID)
		printPassword(out, generated, u.Email, password)
		return nil
	})
}

func adminProjectSettings(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("project-settings", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	project := fs.Int64("project", 0, "the project's id")
	var patch store.SettingsPatch
	fs.Func("setpoint-writing", "on or off", func(v string) error {
		on, ok := map[string]bool{"on": true, "off": false}[v]
		if !ok {
			return fmt.Errorf("must be on or off, got %q", v)
		}
		patch.SetpointWritingEnabled = &on
		return nil
	})
	intFlag := func(name string, dst **int) {
		fs.Func(name, "an integer", func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("must be an integer, got %q", v)
			}
			*dst = &n
			return nil
		})
	}
	intFlag("setpoint-max-priority", &patch.SetpointMaxPriority)
	intFlag("autosampling-n", &patch.AutosamplingN)
	fs.Func("units-system", "a units system id", func(v string) error { patch.UnitsSystem = &v; return nil })
	fs.Func("currency-system", "a currency system id", func(v string) error { patch.CurrencySystem = &v; return nil })
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *project <= 0 {
		return usageError{"project-settings needs --project ID\n\n" + adminUsage}
	}
	return withAdminStore(ctx, func(st *store.Store, _ *auth.Hasher) error {
		ps, err := bdphttp.UpdateProjectSettings(ctx, st, *project, patch)
		if err != nil {
			return clientError(err)
		}
		fmt.Fprintf(out, "project %d settings:\n  setpoint_writing_enabled: %t\n  setpoint_max_priority: %d\n  autosampling_n: %d\n  units_system: %s\n  currency_system: %s\n",
			*project, ps.SetpointWritingEnabled, ps.SetpointMaxPriority, ps.AutosamplingN, ps.UnitsSystem, ps.CurrencySystem)
		return nil
	})
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return usageError{fmt.Sprintf("%v\n\n%s", err, adminUsage)}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q\n\n%s", fs.Arg(0), adminUsage)}
	}
	return nil
}

// adminPassword reads the first line of in, or generates a password of
// 144 random bits.
func adminPassword(fromStdin bool, in io.Reader) (password string, generated bool, err error) {
	if !fromStdin {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return "", false, err
		}
		return base64.RawURLEncoding.EncodeToString(b), true, nil
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", false, fmt.Errorf("read the password from standard input: %w", err)
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", false, errors.New("--password-stdin: standard input holds no password")
	}
	return line, false, nil
}

func printPassword(out io.Writer, generated bool, email, password string) {
	if !generated {
		fmt.Fprintf(out, "log in as %s with the password given\n", email)
		return
	}
	fmt.Fprintf(out, "password: %s\n(shown only now: bdp keeps only its hash; log in as %s with it)\n", password, email)
}

// clientError words a refusal (a duplicate, an unknown email, a short
// password) as the API would, without the error chain behind it.
func clientError(err error) error {
	if k := fault.KindOf(err); k != fault.Internal {
		return errors.New(fault.Message(err))
	}
	return err
}

// withAdminStore opens the database of bdp serve: BDP_DATABASE_URL, or the
// managed cluster, which it shares with a running bdp serve (attaching
// to its server, never taking it over, and leaving the schema to it), or
// else starts for the time of the command and stops again. Without a
// running server, migrations are applied, so the command also works on a
// database no server has used yet.
func withAdminStore(ctx context.Context, fn func(*store.Store, *auth.Hasher) error) error {
	cfg, err := loadConfig(os.Getenv)
	if err != nil {
		return fmt.Errorf("bad configuration:\n%w", err)
	}
	// Only trouble is worth a line here: the command's own output is what
	// the operator reads.
	log := newLogger(max(cfg.LogLevel, slog.LevelWarn))
	var st *store.Store
	closeDB := func() {}
	attached := false
	if cfg.DatabaseURL == "" {
		dir, err := filepath.Abs(filepath.Join(cfg.DataDir, "postgres"))
		if err != nil {
			return err
		}
		cl, err := pgcluster.Attach(ctx, pgcluster.Options{Dir: dir, Logger: log})
		switch {
		case err == nil:
			attached = true
			if st, err = store.Open(ctx, cl.URL()); err != nil {
				return err
			}
			closeDB = st.Close
		case !errors.Is(err, pgcluster.ErrNotRunning):
			return fmt.Errorf("managed PostgreSQL: %w", err)
		}
	}
	if !attached {
		if st, closeDB, err = openDatabase(ctx, cfg, log); err != nil {
			return err
		}
	}
	defer closeDB()
	return fn(st, auth.NewHasher(auth.DefaultHashParams, 1))
}
