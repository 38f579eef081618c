package pipeline

import (
	"context"
	"slices"
	"time"

	"github.com/openbdp/bdp/store"
)

// flush stores one batch in one transaction and answers its requests;
// stored observations then go to the router. When the database refuses
// the batch's data (rather than being unreachable), the fault lies with
// one request, and the batch's other requests, perhaps of other companies,
// must not fail with it: each request is then written on its own.
func (b *Batcher) flush(ctx context.Context, batch []*writeRequest) {
	start := time.Now()
	n := 0
	for _, r := range batch {
		n += len(r.obs)
	}
	b.metrics.queue.Sub(float64(len(batch)))
	err := b.write(ctx, batch)
	b.metrics.flushSeconds.Observe(time.Since(start).Seconds())
	b.metrics.batchSize.Observe(float64(n))
	if err != nil && len(batch) > 1 && store.IsRejected(err) {
		stored := make([]*writeRequest, 0, len(batch))
		for _, r := range batch {
			err := b.write(ctx, []*writeRequest{r})
			b.answer(r, err)
			if err == nil {
				stored = append(stored, r)
			}
		}
		b.route(stored)
		return
	}
	for _, r := range batch {
		b.answer(r, err)
	}
	if err == nil {
		b.route(batch)
	}
}

func (b *Batcher) write(ctx context.Context, batch []*writeRequest) error {
	rows, err := b.rows(ctx, batch)
	if err != nil {
		return err
	}
	return b.store.WriteObservations(ctx, rows)
}

func (b *Batcher) answer(r *writeRequest, err error) {
	if err == nil {
		b.metrics.stored.WithLabelValues(string(r.src)).Add(float64(len(r.obs)))
	} else {
		b.metrics.failed.WithLabelValues(string(r.src)).Add(float64(len(r.obs)))
	}
	r.done <- err
}

func (b *Batcher) route(stored []*writeRequest) {
	if len(stored) == 0 {
		return
	}
	parts := make([][]Observation, len(stored))
	for i, r := range stored {
		parts[i] = r.obs
	}
	b.router.route(parts...)
}

// rows resolves dataPointIDs to datapoint row ids (creating new
// datapoints) and returns the batch's rows in primary-key order, the order
// the store writes fastest, with the last value of each (datapoint, time):
// within one batch, as across batches, a later value replaces an earlier
// one. The slice is the batcher's buffer, reused by the next flush.
func (b *Batcher) rows(ctx context.Context, batch []*writeRequest) ([]store.Row, error) {
	if err := b.resolve(ctx, batch); err != nil {
		return nil, err
	}
	fill := func() []store.Row {
		rows := b.rowBuf[:0]
		for _, r := range batch {
			for i := range r.obs {
				// PostgreSQL keeps microseconds: two times within one are
				// one stored row, and subscribers see the time as stored.
				o := &r.obs[i]
				o.Time = o.Time.Truncate(time.Microsecond)
				id, _ := b.ids.Load(dpKey{o.ProjectID, o.DataPointID})
				rows = append(rows, store.Row{Datapoint: id.(int64), Time: o.Time, Value: o.Value})
			}
		}
		b.rowBuf = rows
		return rows
	}
	// An unstable sort is the fast one; only when it brings two rows of
	// one key together (a replay within the batch, which is rare) does the
	// order among them matter, and then a stable sort of the arrival order
	// decides which value is last.
	rows := fill()
	slices.SortFunc(rows, store.CompareRows)
	if !hasDuplicateKeys(rows) {
		return rows, nil
	}
	rows = fill()
	slices.SortStableFunc(rows, store.CompareRows)
	return keepLast(rows), nil
}

func hasDuplicateKeys(rows []store.Row) bool {
	for i := 1; i < len(rows); i++ {
		if store.CompareRows(rows[i-1], rows[i]) == 0 {
			return true
		}
	}
	return false
}

// keepLast keeps the last row of each run of equal keys, in place.
func keepLast(rows []store.Row) []store.Row {
	out := rows[:0]
	for i, r := range rows {
		if i+1 < len(rows) && store.CompareRows(r, rows[i+1]) == 0 {
			continue
		}
		out = append(out, r)
	}
	return out
}

// resolve makes sure every datapoint of the batch has its row id cached.
func (b *Batcher) resolve(ctx context.Context, batch []*writeRequest) error {
	missing := map[int64]map[string]bool{}
	for _, r := range batch {
		for _, o := range r.obs {
			k := dpKey{o.ProjectID, o.DataPointID}
			if _, ok := b.ids.Load(k); ok {
				continue
			}
			if missing[o.ProjectID] == nil {
				missing[o.ProjectID] = map[string]bool{}
			}
			missing[o.ProjectID][o.DataPointID] = true
		}
	}
	for project, set := range missing {
		names := make([]string, 0, len(set))
		for n := range set {
			names = append(names, n)
		}
		ids, err := b.store.EnsureDatapoints(ctx, project, names)
		if err != nil {
			return err
		}
		for name, id := range ids {
			b.ids.Store(dpKey{project, name}, id)
		}
	}
	return nil
}

// ForgetProject drops the cached datapoint ids of a deleted project.
func (b *Batcher) ForgetProject(projectID int64) {
	b.ids.Range(func(k, _ any) bool {
		if k.(dpKey).project == projectID {
			b.ids.Delete(k)
		}
		return true
	})
}
