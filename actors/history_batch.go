package actors

import (
	"context"

	"github.com/openbdp/bdp/store"
)

// ReadBatcher gathers the history reads of virtual datapoints starting at
// the same time into few queries (store.ReadPages). A restart of the
// platform starts every running datapoint, each reading a page or two per
// pin; one query per page made 100,000 datapoints wait for hundreds of
// thousands of round trips. Nothing waits to fill a batch: a worker takes
// what is queued when it is free, so a lone read costs one query as
// before, and reads pile up into one batch exactly while the database is
// busy with the previous ones.
type ReadBatcher struct {
	store   *store.Store
	workers *workers[*pageRead]
}

// pageRead is one reader's reads, answered together: a batch never splits
// them, and store.ReadPages reads a batch's reads of one direction in one
// statement, so they see one snapshot (StoreHistory.Newest needs that).
type pageRead struct {
	reqs  []store.PageRequest
	reply chan pageResult // buffered: a worker never waits for a reader that gave up
}

type pageResult struct {
	pages [][]store.Point
	err   error
}

const (
	// readWorkers is how many batches are read at once: a few, so that
	// one batch is being answered while the next is planned.
	readWorkers = 4
	// maxBatchReads and maxBatchRows bound one query and what its answer
	// holds in memory.
	maxBatchReads = 512
	maxBatchRows  = 1_000_000
)

// NewReadBatcher starts the workers; Close stops them.
func NewReadBatcher(st *store.Store) *ReadBatcher {
	b := &ReadBatcher{store: st}
	b.workers = startWorkers(readWorkers, maxBatchReads, b.work)
	return b
}

// Close lets the workers answer what is queued and returns once they
// have; later reads query on their own.
func (b *ReadBatcher) Close() { b.workers.close() }

// read answers one page read, in a batch with whatever else is queued.
func (b *ReadBatcher) read(ctx context.Context, req store.PageRequest) ([]store.Point, error) {
	pages, err := b.readAll(ctx, []store.PageRequest{req})
	if err != nil {
		return nil, err
	}
	return pages[0], nil
}

// readAll answers reqs, all in the same batch, with whatever else is
// queued. At most maxBatchReads of them.
func (b *ReadBatcher) readAll(ctx context.Context, reqs []store.PageRequest) ([][]store.Point, error) {
	r := &pageRead{reqs: reqs, reply: make(chan pageResult, 1)}
	queued := b.workers.send(func(in chan<- *pageRead) bool {
		select {
		case in <- r:
			return true
		case <-ctx.Done():
			return false
		}
	})
	if err := ctx.Err(); !queued && err != nil {
		return nil, err
	}
	if !queued {
		return readAlone(ctx, b.store, reqs) // closed
	}
	select {
	case res := <-r.reply:
		return res.pages, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// size is how many reads a pageRead adds to a batch, and how many rows at
// most.
func (r *pageRead) size() (reads, rows int) {
	for _, q := range r.reqs {
		rows += q.Limit
	}
	return len(r.reqs), rows
}

func (b *ReadBatcher) work(in <-chan *pageRead) {
	var carry *pageRead // taken from the queue, but over the last batch's bound
	for {
		first := carry
		if first == nil {
			var ok bool
			if first, ok = <-in; !ok {
				return
			}
		}
		reads, rows := first.size()
		batch := []*pageRead{first}
		carry = nil
	gather:
		for reads < maxBatchReads {
			select {
			case r, ok := <-in:
				if !ok {
					break gather
				}
				n, m := r.size()
				if reads+n > maxBatchReads || rows+m > maxBatchRows {
					carry = r
					break gather
				}
				batch, reads, rows = append(batch, r), reads+n, rows+m
			default:
				break gather
			}
		}
		b.answer(batch)
	}
}

// answer reads one batch under the per-query timeout (the readers' own
// contexts end their waits, not the shared query) and replies to each.
func (b *ReadBatcher) answer(batch []*pageRead) {
	var reqs []store.PageRequest
	for _, r := range batch {
		reqs = append(reqs, r.reqs...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	pages, err := b.store.ReadPages(ctx, reqs)
	for _, r := range batch {
		if err != nil {
			r.reply <- pageResult{err: err}
			continue
		}
		r.reply <- pageResult{pages: pages[:len(r.reqs):len(r.reqs)]}
		pages = pages[len(r.reqs):]
	}
}

// readAlone is reads in a query of their own.
func readAlone(ctx context.Context, st *store.Store, reqs []store.PageRequest) ([][]store.Point, error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	return st.ReadPages(qctx, reqs)
}
