package pipeline

import (
	"cmp"
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
//
// With a relay, a stored batch is published before its requests are
// answered, so that a writer answered with success knows every node will
// deliver its observations; a failed publication answers them with an
// error (they are stored, but a retry is safe). The router then gets the
// batch from the relay's consumer, not from here. Publishing is the
// publisher goroutine's (publishAll): the writer hands it the committed
// batch and goes on with the next transaction.
func (w *writer) flush(ctx context.Context, batch []*writeRequest) {
	b := w.b
	start := time.Now()
	n := 0
	for _, r := range batch {
		n += len(r.obs)
	}
	b.metrics.queue.Sub(float64(len(batch)))
	err := w.write(ctx, batch)
	b.metrics.flushSeconds.Observe(time.Since(start).Seconds())
	b.metrics.batchSize.Observe(float64(n))
	if err != nil && len(batch) > 1 && store.IsRejected(err) {
		stored := make([]*writeRequest, 0, len(batch))
		for _, r := range batch {
			err := w.write(ctx, []*writeRequest{r})
			if err == nil {
				stored = append(stored, r)
			}
			if err != nil || b.relay == nil {
				b.answer(r, err) // with a relay, the stored wait for their publication
			}
		}
		if len(stored) > 0 {
			w.committed(stored, w.sortKeys(stored))
		}
		return
	}
	if err != nil {
		for _, r := range batch {
			b.answer(r, err)
		}
		return
	}
	w.committed(batch, w.keyBuf) // keyBuf: this batch's, from rows
}

// committed passes on a committed batch, with its sorted keys: to the
// relay's publisher, which answers its requests once it is published, or
// on one node answered at once and delivered.
func (w *writer) committed(batch []*writeRequest, keys []rowKey) {
	b := w.b
	if b.relay != nil {
		p := publication{reqs: batch, batches: w.relayBatches(batch, keys)}
		if b.router.tapped() {
			st := b.stored(batch, keys)
			p.stored = &st
		}
		b.published <- p // full: the writer waits for the publisher
		return
	}
	for _, r := range batch {
		b.answer(r, nil)
	}
	w.deliver(batch, keys)
}

// deliver hands a committed batch, with its sorted keys, to the
// subscribers of its datapoints and to the taps (one node).
func (w *writer) deliver(batch []*writeRequest, keys []rowKey) {
	b := w.b
	b.router.route(batch, keys, &w.routeScratch)
	if b.router.tapped() {
		b.router.tap(b.stored(batch, keys))
	}
}

// stored is a committed batch as taps see it: the stored rows (the last
// value of each datapoint and time), grouped by datapoint and in time
// order within each, each with its request's source. keys are the batch's
// sorted keys (sortKeys).
func (b *Batcher) stored(batch []*writeRequest, keys []rowKey) Stored {
	s := Stored{Obs: make([]Observation, 0, len(keys)), Sources: make([]Source, 0, len(keys))}
	for i, k := range keys {
		if i+1 < len(keys) && keys[i+1].dp == k.dp && keys[i+1].us == k.us {
			continue // replaced by a later value, as in the store
		}
		s.Obs = append(s.Obs, batch[k.req].obs[k.i])
		s.Sources = append(s.Sources, batch[k.req].src)
	}
	return s
}

func (w *writer) write(ctx context.Context, batch []*writeRequest) error {
	rows, err := w.rows(ctx, batch)
	if err != nil {
		return err
	}
	return w.b.store.WriteObservations(ctx, rows)
}

func (b *Batcher) answer(r *writeRequest, err error) {
	if err == nil {
		b.metrics.stored.WithLabelValues(string(r.src)).Add(float64(len(r.obs)))
	} else {
		b.metrics.failed.WithLabelValues(string(r.src)).Add(float64(len(r.obs)))
	}
	r.done <- err
}

// rows resolves dataPointIDs to datapoint row ids (creating new
// datapoints) and returns the batch's rows in primary-key order, the order
// the store writes fastest, with the last value of each (datapoint, time):
// within one batch, as across batches, a later value replaces an earlier
// one. The slice is the lane's buffer, reused by its next flush; so are
// the sorted keys, left in keyBuf.
func (w *writer) rows(ctx context.Context, batch []*writeRequest) ([]store.Row, error) {
	keys, uncached := w.keysOf(batch)
	if uncached {
		if err := w.b.resolve(ctx, batch, keys); err != nil {
			return nil, err
		}
	}
	sortRowKeys(keys)
	rows := w.rowBuf[:0]
	for i, k := range keys {
		if i+1 < len(keys) && keys[i+1].dp == k.dp && keys[i+1].us == k.us {
			continue // a later value of the same key follows
		}
		o := &batch[k.req].obs[k.i]
		rows = append(rows, store.Row{Datapoint: k.dp, Time: o.Time, Value: o.Value})
	}
	w.rowBuf = rows
	return rows, nil
}

// sortKeys returns the keys of a batch whose datapoints are all resolved,
// sorted (in the lane's buffer, reused by the next call).
func (w *writer) sortKeys(batch []*writeRequest) []rowKey {
	keys, _ := w.keysOf(batch)
	sortRowKeys(keys)
	return keys
}

// keysOf truncates the batch's times to what PostgreSQL keeps and returns
// its keys in arrival order, in the lane's buffer. A datapoint without a
// cached row id gets 0 and uncached is true: resolve fills them in. One
// pass, one lookup per run of a datapoint: at 100,000 observations a
// second over 270,000 datapoints the lookups miss the caches, and a
// second pass for resolving cost a tenth of the writer's time.
func (w *writer) keysOf(batch []*writeRequest) (keys []rowKey, uncached bool) {
	b := w.b
	keys = w.keyBuf[:0]
	var last dpKey
	var lastID int64
	b.idsMu.RLock()
	for ri, r := range batch {
		for i := range r.obs {
			// PostgreSQL keeps microseconds: two times within one are one
			// stored row, and subscribers see the time as stored.
			o := &r.obs[i]
			o.Time = o.Time.Truncate(time.Microsecond)
			// Consecutive observations mostly share a datapoint (a
			// gateway's message, an upload's series): one lookup for them.
			if k := (dpKey{o.ProjectID, o.DataPointID}); len(keys) == 0 || k != last {
				last, lastID = k, b.ids[k]
				uncached = uncached || lastID == 0
			}
			keys = append(keys, rowKey{dp: lastID, us: o.Time.UnixMicro(), req: int32(ri), i: int32(i)})
		}
	}
	b.idsMu.RUnlock()
	w.keyBuf = keys
	return keys, uncached
}

// sortRowKeys sorts keys by datapoint row id, time and arrival. Sorting
// small integer keys and then placing the rows is several times cheaper
// than sorting the rows by their time.Time: at 50,000 rows a batch the
// sort was the largest cost of ingestion. Arrival breaks ties, so of
// equal keys the last is the latest value.
func sortRowKeys(keys []rowKey) {
	slices.SortFunc(keys, func(a, b rowKey) int {
		if c := cmp.Compare(a.dp, b.dp); c != 0 {
			return c
		}
		if c := cmp.Compare(a.us, b.us); c != 0 {
			return c
		}
		if c := cmp.Compare(a.req, b.req); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
}

// rowKey is one observation of a batch: its primary key, then where it
// arrived (request, index), which orders values of the same key. Without
// pointers, the reused buffer holds no batch alive.
type rowKey struct {
	dp, us int64
	req, i int32
}

// resolve creates the datapoints of the keys without a row id (0), caches
// their ids and fills them in. A key left at 0 is a datapoint whose
// project ForgetProject dropped meanwhile; the store refuses it.
func (b *Batcher) resolve(ctx context.Context, batch []*writeRequest, keys []rowKey) error {
	missing := map[int64]map[string]bool{}
	for _, k := range keys {
		if k.dp != 0 {
			continue
		}
		o := &batch[k.req].obs[k.i]
		if missing[o.ProjectID] == nil {
			missing[o.ProjectID] = map[string]bool{}
		}
		missing[o.ProjectID][o.DataPointID] = true
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
		b.idsMu.Lock()
		for name, id := range ids {
			b.ids[dpKey{project, name}] = id
		}
		b.idsMu.Unlock()
	}
	b.idsMu.RLock()
	defer b.idsMu.RUnlock()
	for j, k := range keys {
		if k.dp == 0 {
			o := &batch[k.req].obs[k.i]
			keys[j].dp = b.ids[dpKey{o.ProjectID, o.DataPointID}]
		}
	}
	return nil
}

// ForgetProject drops the cached datapoint ids of a deleted project.
func (b *Batcher) ForgetProject(projectID int64) {
	b.idsMu.Lock()
	defer b.idsMu.Unlock()
	for k := range b.ids {
		if k.project == projectID {
			delete(b.ids, k)
		}
	}
}
