package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/store"
	"github.com/openbdp/bdp/store/pgcluster"
	"github.com/openbdp/bdp/store/sealer"
)

// ingestWhileSealing is bench/ingest.go's measurement with the sealer
// working, in ingestRounds rounds: in each, the sealer's pass over the
// loaded backlog runs at the default duty while gateways produce through
// Kafka into bdp serve, into a project of their own; once bdp serve has
// stored every observation the pass is cut off (its batch in progress
// rolls back, as at a shutdown). Then a control, the same ingest with no
// sealer into another project, tells what the sealer costs; and the rows
// the first ingest stored are loaded by a raw pgx CopyFrom with nothing
// else running, as make bench-ingest does. The ratio is the median Kafka
// rate with the sealer over the median raw rate: one round alone moved
// by a third with the machine's load. The sealer runs in this process
// rather than in bdp serve, the same code on the same database, so that
// the pass can be stopped and counted.
func ingestWhileSealing(ctx context.Context, p *Platform, st *store.Store, o StorageOptions, topic string, dataEnd time.Time, log *slog.Logger, res map[string]any) error {
	s, err := sealer.New(st, sealer.Config{}, log, nil)
	if err != nil {
		return err
	}
	in := IngestOptions{Brokers: o.Brokers, Observations: o.IngestObservations, Datapoints: o.IngestDatapoints}
	fillIngestDefaults(&in)
	var withSealer, control, raw []float64 // observations a second, by round
	var sealedMeanwhile int64
	stored := 0 // from Kafka, so far
	for round := range ingestRounds {
		sealing, err := p.anotherProject(ctx, fmt.Sprintf("storage-ingest-%d", round))
		if err != nil {
			return err
		}
		o.Progress("round %d of %d: ingesting %d observations through Kafka while the sealer's pass runs (duty %.0f %%)",
			round+1, ingestRounds, in.Observations, sealer.DefaultDuty*100)
		passCtx, stopPass := context.WithCancel(ctx)
		passDone := make(chan sealer.PassResult, 1)
		passErr := make(chan error, 1)
		go func() {
			r, err := s.Pass(passCtx)
			passDone <- r
			passErr <- err
		}()
		began := time.Now()
		err = produce(ctx, in, topic, sealing)
		if err == nil {
			stored += in.Observations
			err = p.waitStoredKafka(ctx, stored, 10*time.Minute)
		}
		elapsed := time.Since(began)
		stopPass()
		r, perr := <-passDone, <-passErr
		if err != nil {
			return err
		}
		if perr != nil && passCtx.Err() == nil {
			return fmt.Errorf("seal pass beside the ingest: %w", perr)
		}
		sealedMeanwhile += r.Rows
		withSealer = append(withSealer, float64(in.Observations)/elapsed.Seconds())

		o.Progress("round %d of %d: the same ingest without the sealer", round+1, ingestRounds)
		plain, err := p.anotherProject(ctx, fmt.Sprintf("storage-control-%d", round))
		if err != nil {
			return err
		}
		began = time.Now()
		if err := produce(ctx, in, topic, plain); err != nil {
			return err
		}
		stored += in.Observations
		if err := p.waitStoredKafka(ctx, stored, 10*time.Minute); err != nil {
			return err
		}
		control = append(control, float64(in.Observations)/time.Since(began).Seconds())

		copySeconds, copied, err := copyBaseline(ctx, p.DBURL, dataEnd, sealing)
		if err != nil {
			return err
		}
		if copied != int64(in.Observations) {
			return fmt.Errorf("stored %d observations from Kafka, produced %d", copied, in.Observations)
		}
		raw = append(raw, float64(in.Observations)/copySeconds)
		o.Progress("round %d of %d: ingest %.0f obs/s with the sealer (it sealed %d rows meanwhile), %.0f obs/s without; raw COPY %.0f obs/s",
			round+1, ingestRounds, withSealer[round], r.Rows, control[round], raw[round])
	}
	obsPerS, controlPerS, copyPerS := midpointMedian(withSealer), midpointMedian(control), midpointMedian(raw)
	res["ingest_ratio_sealing"] = round3(obsPerS / copyPerS)
	res["ingest_ratio_no_sealer"] = round3(controlPerS / copyPerS)
	res["ingest_obs_per_s"] = int(obsPerS)
	res["ingest_no_sealer_obs_per_s"] = int(controlPerS)
	res["ingest_copy_obs_per_s"] = int(copyPerS)
	res["ingest_observations"] = in.Observations
	res["ingest_rounds"] = ingestRounds
	res["ingest_sealed_meanwhile"] = sealedMeanwhile
	return nil
}

// ingestRounds is how many times ingestWhileSealing measures each rate.
const ingestRounds = 3

// copyBaseline is Platform.rawCopy for the rows one Kafka ingest stored
// into project since a time (the head holds the loaded mix, and the
// control's rows, too): they are read, ordered as live data arrives, and
// loaded with one CopyFrom into a fresh partitioned table shaped like
// observations. It answers the seconds and the rows.
func copyBaseline(ctx context.Context, url string, since time.Time, project int64) (float64, int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT datapoint, time, value FROM observations
		WHERE time >= $1 AND datapoint IN (SELECT id FROM datapoints WHERE project_id = $2) ORDER BY time, datapoint`, since, project)
	if err != nil {
		return 0, 0, err
	}
	data, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) {
		var dp int64
		var t time.Time
		var v float64
		err := r.Scan(&dp, &t, &v)
		return []any{dp, t, v}, err
	})
	if err != nil || len(data) == 0 {
		return 0, 0, err
	}
	lo, hi := data[0][1].(time.Time), data[len(data)-1][1].(time.Time)
	if _, err := conn.Exec(ctx, `CREATE TABLE storage_copy_target (LIKE observations INCLUDING ALL) PARTITION BY RANGE (time)`); err != nil {
		return 0, 0, err
	}
	for w := mondayOf(lo); !w.After(hi); w = w.AddDate(0, 0, 7) {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE storage_copy_target_%d PARTITION OF storage_copy_target FOR VALUES FROM ('%s') TO ('%s')`,
			w.Unix(), w.Format(time.RFC3339), w.AddDate(0, 0, 7).Format(time.RFC3339))); err != nil {
			return 0, 0, err
		}
	}
	start := time.Now()
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"storage_copy_target"}, []string{"datapoint", "time", "value"}, pgx.CopyFromRows(data)); err != nil {
		return 0, 0, err
	}
	took := time.Since(start).Seconds()
	if _, err := conn.Exec(ctx, `DROP TABLE storage_copy_target`); err != nil {
		return 0, 0, err
	}
	return took, int64(len(data)), nil
}

// sealRest seals what the first pass left, in one pass at full duty with
// nothing else running, and times it in CPU: this process's (the sealer's
// Go side: reading the deleted rows, encoding, writing the chunks) from
// getrusage, and PostgreSQL's (every server process of the cluster) from
// /proc.
func sealRest(ctx context.Context, p *Platform, st *store.Store, o StorageOptions, log *slog.Logger, res map[string]any) error {
	s, err := sealer.New(st, sealer.Config{Duty: 1}, log, nil)
	if err != nil {
		return err
	}
	pgDir, err := dataDirectory(ctx, p.DBURL)
	if err != nil {
		return err
	}
	o.Progress("sealing the rest at full duty")
	stopProfile := func() {}
	if o.SealProfile != "" {
		if stopProfile, err = startCPUProfile(o.SealProfile); err != nil {
			return err
		}
	}
	goBefore, pgBefore := selfCPU(), clusterCPU(pgDir)
	began := time.Now()
	r, err := s.Pass(ctx)
	wall := time.Since(began)
	goCPU, pgCPU := selfCPU()-goBefore, cpuSince(pgDir, pgBefore)
	stopProfile()
	if err != nil {
		return err
	}
	if r.Rows == 0 {
		return fmt.Errorf("the sealer's second pass sealed nothing: %+v", r)
	}
	res["sealer_obs_per_cpu_s"] = int(float64(r.Rows) / goCPU.Seconds())
	res["sealer_rows"] = r.Rows
	res["sealer_weeks"] = r.Weeks
	res["sealer_go_cpu_s"] = round3(goCPU.Seconds())
	res["sealer_pg_cpu_s"] = round3(pgCPU.Seconds())
	res["sealer_wall_s"] = round3(wall.Seconds())
	res["sealer_obs_per_s"] = int(float64(r.Rows) / wall.Seconds())
	o.Progress("sealed %d rows in %.1f s: Go CPU %.1f s, PostgreSQL CPU %.1f s", r.Rows, wall.Seconds(), goCPU.Seconds(), pgCPU.Seconds())
	return nil
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func dataDirectory(ctx context.Context, url string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var dir string
	if err := conn.QueryRow(ctx, `SELECT current_setting('data_directory')`).Scan(&dir); err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir, nil
}

// clusterCPU is the user and system CPU time of each live server process
// of the cluster in dir.
func clusterCPU(dir string) map[int]time.Duration {
	out := map[int]time.Duration{}
	for _, pid := range pgcluster.ProcessesIn(dir) {
		if d, err := processCPU(pid); err == nil {
			out[pid] = d
		}
	}
	return out
}

// cpuSince is the CPU time the cluster's processes spent since before
// was read. A process that exited meanwhile takes its time along: the
// figure is a floor.
func cpuSince(dir string, before map[int]time.Duration) time.Duration {
	var sum time.Duration
	for pid, d := range clusterCPU(dir) {
		sum += d - before[pid]
	}
	return sum
}

// startCPUProfile profiles this process into path until stop.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
