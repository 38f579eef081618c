package pipeline

import (
	"context"
	"time"

	"github.com/openbdp/bdp/store"
)

// flush stores one batch in one transaction and answers its requests;
// stored observations then go to the router.
func (b *Batcher) flush(ctx context.Context, batch []*writeRequest) {
	start := time.Now()
	n := 0
	for _, r := range batch {
		n += len(r.obs)
	}
	b.metrics.queue.Sub(float64(len(batch)))
	rows, err := b.rows(ctx, batch)
	if err == nil {
		err = b.store.WriteObservations(ctx, rows)
	}
	b.metrics.flushSeconds.Observe(time.Since(start).Seconds())
	b.metrics.batchSize.Observe(float64(n))
	for _, r := range batch {
		if err == nil {
			b.metrics.stored.WithLabelValues(string(r.src)).Add(float64(len(r.obs)))
		} else {
			b.metrics.failed.WithLabelValues(string(r.src)).Add(float64(len(r.obs)))
		}
		r.done <- err
	}
	if err != nil {
		return
	}
	for _, r := range batch {
		b.router.route(r.obs)
	}
}

// rows resolves dataPointIDs to datapoint row ids (creating new
// datapoints) and keeps the last value of each (datapoint, time): within
// one batch, as across batches, a later value replaces an earlier one.
func (b *Batcher) rows(ctx context.Context, batch []*writeRequest) ([]store.Row, error) {
	if err := b.resolve(ctx, batch); err != nil {
		return nil, err
	}
	type rowKey struct {
		dp int64
		t  int64
	}
	index := map[rowKey]int{}
	rows := make([]store.Row, 0, len(batch[0].obs))
	for _, r := range batch {
		for _, o := range r.obs {
			id, _ := b.ids.Load(dpKey{o.ProjectID, o.DataPointID})
			row := store.Row{Datapoint: id.(int64), Time: o.Time, Value: o.Value}
			k := rowKey{row.Datapoint, o.Time.UnixNano()}
			if i, dup := index[k]; dup {
				rows[i] = row
				continue
			}
			index[k] = len(rows)
			rows = append(rows, row)
		}
	}
	return rows, nil
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
