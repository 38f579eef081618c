package actors

import (
	"context"
	"sync"

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
	in      chan *pageRead
	workers sync.WaitGroup

	mu     sync.RWMutex // makes "not closed" and "queued" one step
	closed bool
}

type pageRead struct {
	req   store.PageRequest
	reply chan pageResult // buffered: a worker never waits for a reader that gave up
}

type pageResult struct {
	pts []store.Point
	err error
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
	b := &ReadBatcher{store: st, in: make(chan *pageRead, maxBatchReads)}
	b.workers.Add(readWorkers)
	for range readWorkers {
		go b.work()
	}
	return b
}

// Close lets the workers answer what is queued and returns once they
// have; later reads query on their own.
func (b *ReadBatcher) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.in)
	b.mu.Unlock()
	b.workers.Wait()
}

// read answers one page read, in a batch with whatever else is queued.
func (b *ReadBatcher) read(ctx context.Context, req store.PageRequest) ([]store.Point, error) {
	r := &pageRead{req: req, reply: make(chan pageResult, 1)}
	b.mu.RLock()
	if b.closed {
		b.mu.RUnlock()
		return readAlone(ctx, b.store, req)
	}
	select {
	case b.in <- r:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		return nil, ctx.Err()
	}
	select {
	case res := <-r.reply:
		return res.pts, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *ReadBatcher) work() {
	defer b.workers.Done()
	var carry *pageRead // taken from the queue, but over the last batch's bound
	for {
		first := carry
		if first == nil {
			var ok bool
			if first, ok = <-b.in; !ok {
				return
			}
		}
		batch, rows := []*pageRead{first}, first.req.Limit
		carry = nil
	gather:
		for len(batch) < maxBatchReads {
			select {
			case r, ok := <-b.in:
				if !ok {
					break gather
				}
				if rows+r.req.Limit > maxBatchRows {
					carry = r
					break gather
				}
				batch, rows = append(batch, r), rows+r.req.Limit
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
	reqs := make([]store.PageRequest, len(batch))
	for i, r := range batch {
		reqs[i] = r.req
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	pages, err := b.store.ReadPages(ctx, reqs)
	for i, r := range batch {
		if err != nil {
			r.reply <- pageResult{err: err}
			continue
		}
		r.reply <- pageResult{pts: pages[i]}
	}
}

// readAlone is one page read in a query of its own.
func readAlone(ctx context.Context, st *store.Store, req store.PageRequest) ([]store.Point, error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	pages, err := st.ReadPages(qctx, []store.PageRequest{req})
	if err != nil {
		return nil, err
	}
	return pages[0], nil
}
