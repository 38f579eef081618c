package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/openbdp/bdp/auth"
	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/sealer"
)

const adminStorageUsage = `  bdp admin storage [--exact]
  bdp admin storage seal
  bdp admin storage unseal (--week YYYY-MM-DD | --all)
`

// adminStorage shows the storage figures (rows and chunks, bytes per
// observation by state, the weeks the sealer has left), seals what is
// due now (at full speed, with the configured grace), or unseals weeks
// back into rows (the rollback of sealing).
func adminStorage(ctx context.Context, args []string, out io.Writer) error {
	sub := "show"
	if len(args) > 0 && (args[0] == "seal" || args[0] == "unseal") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("storage", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	exact := fs.Bool("exact", false, "count the head's rows (slow on a large database) instead of PostgreSQL's estimate")
	week := fs.String("week", "", "unseal: the week (its Monday, or any day of it)")
	all := fs.Bool("all", false, "unseal: every sealed week")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(os.Getenv) // the seal grace, for seal and weeks_due
	if err != nil {
		return fmt.Errorf("bad configuration:\n%w", err)
	}
	return withAdminStore(ctx, func(st *store.Store, _ *auth.Hasher) error {
		switch sub {
		case "seal":
			sc := sealer.Config{Duty: 1}
			if cfg.Seal != nil {
				sc.Grace = cfg.Seal.Grace
			}
			s, err := sealer.New(st, sc, slog.New(slog.DiscardHandler), nil)
			if err != nil {
				return err
			}
			res, err := s.Pass(ctx)
			if err != nil {
				return err
			}
			if err := printJSON(out, res); err != nil {
				return err
			}
		case "unseal":
			weeks, err := unsealWeeks(ctx, st, *week, *all)
			if err != nil {
				return err
			}
			for _, w := range weeks {
				n, err := st.UnsealWeek(ctx, w)
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "unsealed %d observations of the week of %s\n", n, w.Format(time.DateOnly))
			}
		}
		f, err := st.StorageFigures(ctx, *exact)
		if err != nil {
			return err
		}
		report := storageReport(f)
		// The sealer's progress: the closed weeks past the grace that the
		// head still holds rows of.
		if cfg.Seal != nil {
			due, err := st.SealableWeeks(ctx, time.Now().Add(-cfg.Seal.Grace))
			if err != nil {
				return err
			}
			report["weeks_due"] = len(due)
		}
		return printJSON(out, report)
	})
}

// unsealWeeks are the weeks unseal works on.
func unsealWeeks(ctx context.Context, st *store.Store, week string, all bool) ([]time.Time, error) {
	switch {
	case all && week == "":
		return st.SealedWeeks(ctx)
	case !all && week != "":
		w, err := time.Parse(time.DateOnly, week)
		if err != nil {
			return nil, usageError{"--week must be a date such as 2024-01-01\n\n" + adminUsage}
		}
		return []time.Time{w}, nil
	}
	return nil, usageError{"unseal needs --week or --all\n\n" + adminUsage}
}

// storageReport is what bdp admin storage prints.
func storageReport(f store.StorageFigures) map[string]any {
	state := func(s store.StateFigures) map[string]any {
		return map[string]any{"observations": s.Observations, "bytes": s.Bytes, "bytes_per_observation": s.BytesPerObservation()}
	}
	return map[string]any{"head": state(f.Head), "sealed": state(f.Sealed), "chunks": f.Chunks}
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
