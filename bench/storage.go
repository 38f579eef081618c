package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/store"
)

// StorageKeys are issue 21's figures, in its table's order: the first
// keys of bdp-bench storage's JSON object.
var StorageKeys = []string{
	"bytes_per_obs_sealed", "bytes_per_obs_fixed_cadence", "bytes_per_obs_jittered", "bytes_per_obs_full_precision",
	"export_ratio_newest", "export_ratio_hourly_30d", "export_ratio_daily_1y",
	"ingest_ratio_sealing", "sealer_obs_per_cpu_s", "lost_or_duplicated",
}

// StorageOptions shape bdp-bench storage. Zero fields take the defaults,
// scaled by Scale where the field says so.
type StorageOptions struct {
	Binary  string   // the bdp binary, for the Kafka ingest
	Brokers []string // a running Kafka broker
	Data    string   // the BSRN file (scripts/fetch-pvlib-data.sh); default DefaultStorageData()
	Seed    uint64   // of the derived series; default 1
	Scale   float64  // default 1; smaller for a quick run

	Datapoints int // of the mix, a multiple of 12; default 48 × Scale, at least 12
	Weeks      int // of one-minute data each; default 52 × Scale, at least 2
	Reads      int // per export query and side; default 101 × Scale, at least 11

	IngestObservations int // through Kafka while the sealer works; default 2,000,000 × Scale, at least 20,000
	IngestDatapoints   int // default 10,000 × Scale, at least 100

	LateDatapoints int           // of the late-write test; default Datapoints
	LateWeeks      int           // default 3
	LateDuration   time.Duration // of its writers, readers and passes; default 60 s × Scale, at least 5 s

	SealProfile string // where to write a CPU profile of the full-duty pass; empty: none
	ReadProfile string // the same of the export reads

	Progress func(format string, a ...any) // nil: quiet
}

func (o *StorageOptions) fill() error {
	if o.Scale == 0 {
		o.Scale = 1
	}
	if o.Scale < 0 {
		return errors.New("storage: scale must be positive")
	}
	scaled := func(v *int, def float64, least int) {
		if *v == 0 {
			*v = max(least, int(math.Round(def*o.Scale)))
		}
	}
	scaled(&o.Datapoints, 48, 12)
	o.Datapoints = (o.Datapoints + 11) / 12 * 12
	scaled(&o.Weeks, 52, 2)
	scaled(&o.Reads, 101, 11)
	scaled(&o.IngestObservations, 2_000_000, 20_000)
	scaled(&o.IngestDatapoints, 10_000, 100)
	if o.LateDatapoints == 0 {
		o.LateDatapoints = o.Datapoints
	}
	if o.LateWeeks == 0 {
		o.LateWeeks = 3
	}
	if o.LateDuration == 0 {
		o.LateDuration = max(5*time.Second, time.Duration(float64(time.Minute)*o.Scale))
	}
	if o.Data == "" {
		o.Data = DefaultStorageData()
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	if len(o.Brokers) == 0 {
		return errors.New("storage: no Kafka broker: run `make bench-storage`, or pass -brokers")
	}
	if o.IngestObservations/o.IngestDatapoints > 7*24*60 {
		return errors.New("storage: more than a week of minutes per ingest datapoint")
	}
	return nil
}

// Storage is bdp-bench storage (issue 21): the measured month stretched
// into a building's mix of series, loaded into the head, sealed by the
// sealer (a Kafka ingest running beside its first, throttled, pass), then
// measured: bytes per observation sealed, overall and by kind; reads of a
// sealed datapoint against its twin kept in rows; the sealer's throughput
// per CPU-second; and a concurrent late-write test against a model of
// what was acknowledged.
func Storage(ctx context.Context, o StorageOptions) (map[string]any, error) {
	if err := o.fill(); err != nil {
		return nil, err
	}
	month, err := readBSRN(o.Data)
	if err != nil {
		return nil, err
	}
	topic := fmt.Sprintf("bench.storage.%d", time.Now().UnixNano())
	if err := createTopic(ctx, o.Brokers[0], topic, 4); err != nil {
		return nil, err
	}
	o.Progress("starting PostgreSQL and bdp serve")
	// bdp serve's own sealer stays off: the bench runs the sealer itself,
	// to time its passes and cut them where it wants.
	p, err := Start(ctx, Options{Binary: o.Binary, Env: []string{"BDP_KAFKA_BROKERS=" + strings.Join(o.Brokers, ","),
		"BDP_KAFKA_TOPIC=" + topic, "BDP_KAFKA_GROUP=" + topic, "BDP_SEAL_GRACE=off"}})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	st, err := store.Open(ctx, p.DBURL)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	res := map[string]any{"scenario": "storage", "key_order": StorageKeys, "datapoints": o.Datapoints, "weeks": o.Weeks,
		"dataset": "pvlib 0.10.5 pvlib/data/bsrn-pay0616.dat.gz (BSRN Payerne, June 2016, 1 min)"}
	// The data ends a week before the current one: every loaded week is
	// due with the default grace, and the Kafka ingest's minutes (up to
	// today) are not.
	end := mondayOf(time.Now()).AddDate(0, 0, -7)
	start := end.AddDate(0, 0, -7*o.Weeks)
	mix, err := newStorageMix(ctx, st, p.ProjectID, month, o, start)
	if err != nil {
		return nil, err
	}
	if err := mix.load(ctx, p.DBURL, res); err != nil {
		return nil, err
	}
	if err := ingestWhileSealing(ctx, p, st, o, topic, end, log, res); err != nil {
		return nil, err
	}
	if err := sealRest(ctx, p, st, o, log, res); err != nil {
		return nil, err
	}
	if err := mix.measureBytes(ctx, p.DBURL, res); err != nil {
		return nil, err
	}
	if err := mix.exportRatios(ctx, p.DBURL, end, res); err != nil {
		return nil, err
	}
	if err := lateWrites(ctx, p, month, o, log, res); err != nil {
		return nil, err
	}
	return res, nil
}

// mondayOf is the Monday 00:00 UTC on or before t, where the head's weekly
// partitions start.
func mondayOf(t time.Time) time.Time {
	t = t.UTC()
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// maintain runs statements one by one on a connection of its own: the
// CHECKPOINT, VACUUM and ANALYZE a production database's autovacuum would
// have done by the time a week is sealed. The throwaway cluster commits
// asynchronously, and VACUUM marks a page all-visible only once its rows'
// commits are flushed: CHECKPOINT flushes them first.
func maintain(ctx context.Context, url string, sqls ...string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, sql := range sqls {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("%s: %w", sql, err)
		}
	}
	return nil
}
