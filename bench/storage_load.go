package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openbdp/bdp/store"
)

// storageMix is the loaded mix: datapoint i of kind storageLayout()[i%12],
// its series from newSeries(seed, i), one-minute data from start on.
type storageMix struct {
	st    *store.Store
	month *bsrnMonth
	o     StorageOptions
	start time.Time
	ids   []int64
	kinds map[int64]storageKind
	twin  int64 // the export twin of datapoint exportSource, kept in rows
}

// exportSource is the datapoint the export reads compare with its twin:
// the first 0.01 °C temperature on the minute, the commonest kind.
const exportSource = 1

func newStorageMix(ctx context.Context, st *store.Store, project int64, month *bsrnMonth, o StorageOptions, start time.Time) (*storageMix, error) {
	names := make([]string, o.Datapoints+1)
	for i := range o.Datapoints {
		names[i] = fmt.Sprintf("building/%s/%04d", storageLayout()[i%len(storageLayout())], i)
	}
	names[o.Datapoints] = fmt.Sprintf("building/twin/%04d", exportSource)
	byName, err := st.EnsureDatapoints(ctx, project, names)
	if err != nil {
		return nil, err
	}
	m := &storageMix{st: st, month: month, o: o, start: start, kinds: map[int64]storageKind{}, twin: byName[names[o.Datapoints]]}
	for i, n := range names[:o.Datapoints] {
		m.ids = append(m.ids, byName[n])
		m.kinds[byName[n]] = storageLayout()[i%len(storageLayout())]
	}
	return m, nil
}

// load writes every datapoint's weeks into the head as live data would
// arrive: a week's series made in memory, then written an hour of every
// datapoint per transaction (binary COPY, store.WriteObservations) by two
// writers, so that a partition's rows lie in time order as the pipeline
// leaves them, not clustered by datapoint, which would flatter the
// sealer's deletes. Then the head is vacuumed and analyzed.
func (m *storageMix) load(ctx context.Context, url string, res map[string]any) error {
	began := time.Now()
	series := make([]*series, len(m.ids))
	for i := range series {
		series[i] = newSeries(m.o.Seed, i)
	}
	batches := make(chan []store.Row, 4)
	errs := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if err := m.st.WriteObservations(ctx, b); err != nil {
					errs <- fmt.Errorf("load the mix: %w", err)
					return
				}
			}
		}()
	}
	var total int64
	perKind := map[storageKind]int64{}
	send := func(b []store.Row) error {
		select {
		case batches <- b:
			return nil
		case err := <-errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	err := func() error {
		weekRows := make([][]store.Row, len(m.ids))
		for w := range m.o.Weeks {
			for i, s := range series {
				weekRows[i] = s.week(m.month, m.ids[i], m.start, w, weekRows[i][:0])
				total += int64(len(weekRows[i]))
				perKind[s.kind] += int64(len(weekRows[i]))
			}
			if err := sendHours(weekRows, m.start.AddDate(0, 0, 7*w), send); err != nil {
				return err
			}
			if (w+1)%4 == 0 || w+1 == m.o.Weeks {
				m.o.Progress("loaded %d of %d weeks, %d observations, %.0f obs/s", w+1, m.o.Weeks, total, float64(total)/time.Since(began).Seconds())
			}
		}
		return nil
	}()
	close(batches)
	wg.Wait()
	close(errs)
	if err != nil {
		return err
	}
	if err := <-errs; err != nil {
		return err
	}
	loadTook := time.Since(began)
	vacuumed := time.Now()
	if err := maintain(ctx, url, `CHECKPOINT`, `VACUUM (ANALYZE) observations`); err != nil {
		return err
	}
	res["observations"] = total
	res["load_obs_per_s"] = int(float64(total) / loadTook.Seconds())
	res["load_s"] = round3(loadTook.Seconds())
	res["head_vacuum_s"] = round3(time.Since(vacuumed).Seconds())
	share := map[string]float64{}
	for k, n := range perKind {
		share[string(k)] = round3(float64(n) / float64(total))
	}
	res["mix_share"] = share
	m.o.Progress("loaded %d observations in %.0f s, vacuumed in %.0f s", total, loadTook.Seconds(), time.Since(vacuumed).Seconds())
	return nil
}

// sendHours cuts a week's series (each sorted by time) into hours of
// every datapoint and sends them; weekStart is where the week begins.
// Rows before the first hour (a jittered first minute) go with it.
func sendHours(weekRows [][]store.Row, weekStart time.Time, send func([]store.Row) error) error {
	next := make([]int, len(weekRows))
	for h := 1; h <= 7*24; h++ {
		bound := weekStart.Add(time.Duration(h) * time.Hour)
		var batch []store.Row
		for i, rows := range weekRows {
			j := next[i]
			for j < len(rows) && (rows[j].Time.Before(bound) || h == 7*24) {
				j++
			}
			batch = append(batch, rows[next[i]:j]...)
			next[i] = j
		}
		if len(batch) > 0 {
			if err := send(batch); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureBytes reads the sealed figures after the vacuum a production
// database's autovacuum would do: the whole mix is
// pg_total_relation_size('observation_chunks') over the sealed
// observations. By kind, the table's bytes are shared out: the TOAST
// relation's (with its index) in proportion to each kind's data stored
// out of line (chunks over TOAST's 2 kB threshold), the rest (heap, the
// primary key, free-space and visibility maps) in proportion to its
// chunks, since each chunk is one heap row and one index entry. The
// kinds' bytes add up to the whole.
func (m *storageMix) measureBytes(ctx context.Context, url string, res map[string]any) error {
	if err := maintain(ctx, url, `CHECKPOINT`, `VACUUM (ANALYZE) observation_chunks`, `VACUUM (ANALYZE) observations`); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var total, toast int64
	if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size('observation_chunks'),
		coalesce((SELECT pg_total_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'observation_chunks'::regclass AND reltoastrelid <> 0), 0)`).
		Scan(&total, &toast); err != nil {
		return fmt.Errorf("chunk sizes: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT datapoint, count(*), sum(n), sum(octet_length(data)) FILTER (WHERE octet_length(data) > 2000)
		FROM observation_chunks GROUP BY datapoint`)
	if err != nil {
		return fmt.Errorf("chunks by datapoint: %w", err)
	}
	type figures struct{ chunks, obs, outOfLine int64 }
	byKind := map[storageKind]*figures{}
	var all figures
	var dp, chunks, obs int64
	var outOfLine *int64
	if _, err := pgx.ForEachRow(rows, []any{&dp, &chunks, &obs, &outOfLine}, func() error {
		k, ok := m.kinds[dp]
		if !ok {
			return nil // not of the mix (there is none: the twin stays rows)
		}
		f := byKind[k]
		if f == nil {
			f = &figures{}
			byKind[k] = f
		}
		f.chunks += chunks
		f.obs += obs
		all.chunks += chunks
		all.obs += obs
		if outOfLine != nil {
			f.outOfLine += *outOfLine
			all.outOfLine += *outOfLine
		}
		return nil
	}); err != nil {
		return fmt.Errorf("chunks by datapoint: %w", err)
	}
	if all.obs == 0 {
		return fmt.Errorf("nothing sealed")
	}
	var sealedObs int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(sum(n), 0) FROM observation_chunks`).Scan(&sealedObs); err != nil {
		return err
	}
	res["bytes_per_obs_sealed"] = round3(float64(total) / float64(sealedObs))
	res["sealed_observations"] = sealedObs
	res["chunks"] = all.chunks
	res["chunks_bytes"] = total
	for _, k := range storageKinds() {
		f := byKind[k]
		if f == nil || f.obs == 0 {
			continue
		}
		bytes := float64(total-toast) * float64(f.chunks) / float64(all.chunks)
		if all.outOfLine > 0 {
			bytes += float64(toast) * float64(f.outOfLine) / float64(all.outOfLine)
		}
		res["bytes_per_obs_"+string(k)] = round3(bytes / float64(f.obs))
	}
	head, err := m.st.StorageFigures(ctx, true)
	if err != nil {
		return err
	}
	res["head_observations_after_seal"] = head.Head.Observations
	m.o.Progress("sealed: %d observations in %d chunks, %d bytes", sealedObs, all.chunks, total)
	return nil
}
