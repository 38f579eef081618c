package actors

import (
	"context"
	"slices"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline/window"
	"github.com/openbdp/bdp/store"
)

// StoreHistory reads window history from PostgreSQL.
type StoreHistory struct {
	Store *store.Store
	// Batches, if set, reads the pages in batches with other actors'
	// (ReadBatcher): the engine's history, where many actors start at once.
	Batches *ReadBatcher
}

var _ SourceReader = StoreHistory{}

// historyPage is how many observations one query of a window refill reads:
// a refill pages backwards from its end, so no single query answers more,
// whatever the source holds.
const historyPage = 10_000

// queryTimeout bounds each query of a refill or catch-up, not the whole:
// a long history takes many pages, a hung database must not hold an actor
// for ever.
const queryTimeout = 30 * time.Second

// Recent implements History, reading pages of historyPage newest first.
func (h StoreHistory) Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]Point, error) {
	readBefore := func(before time.Time, limit int) ([]store.Point, error) {
		return h.Batches.read(ctx, store.PageRequest{Project: projectID, Name: dataPointID, From: since, To: before, Limit: limit, Newest: true})
	}
	if h.Batches == nil {
		id, found, err := h.datapoint(ctx, projectID, dataPointID)
		if err != nil || !found {
			return nil, err // no observation yet: an empty window
		}
		readBefore = func(before time.Time, limit int) ([]store.Point, error) {
			qctx, cancel := context.WithTimeout(ctx, queryTimeout)
			defer cancel()
			return h.Store.ReadPageBefore(qctx, id, since, before, limit)
		}
	}
	var pts []Point // newest first until the end
	for before := end; count <= 0 || len(pts) < count; {
		limit := historyPage
		if count > 0 {
			limit = min(limit, count-len(pts))
		}
		page, err := readBefore(before, limit)
		if err != nil {
			return nil, err
		}
		for _, p := range page {
			pts = append(pts, Point(p))
		}
		if len(page) < limit {
			break
		}
		before = page[len(page)-1].Time
	}
	slices.Reverse(pts)
	return pts, nil
}

// Newest implements SourceReader: the reads of all of ids go in one
// statement (store.ReadPages; ReadBatcher never splits them), so they see
// one snapshot.
func (h StoreHistory) Newest(ctx context.Context, projectID int64, ids []string) ([]time.Time, error) {
	reqs := make([]store.PageRequest, len(ids))
	for i, id := range ids {
		reqs[i] = store.PageRequest{Project: projectID, Name: id, To: endOfTime, Limit: 1, Newest: true}
	}
	var pages [][]store.Point
	var err error
	if h.Batches != nil && len(reqs) <= maxBatchReads {
		pages, err = h.Batches.readAll(ctx, reqs)
	} else {
		pages, err = readAlone(ctx, h.Store, reqs)
	}
	if err != nil {
		return nil, err
	}
	newest := make([]time.Time, len(ids))
	for i, p := range pages {
		if len(p) > 0 {
			newest[i] = p[0].Time
		}
	}
	return newest, nil
}

// Page implements SourceReader.
func (h StoreHistory) Page(ctx context.Context, projectID int64, dataPointID string, from, to time.Time, limit int) ([]Point, error) {
	rows, err := h.page(ctx, projectID, dataPointID, from, to, limit)
	if err != nil {
		return nil, err
	}
	pts := make([]Point, len(rows))
	for i, p := range rows {
		pts[i] = Point(p)
	}
	return pts, nil
}

func (h StoreHistory) page(ctx context.Context, projectID int64, dataPointID string, from, to time.Time, limit int) ([]store.Point, error) {
	if h.Batches != nil {
		return h.Batches.read(ctx, store.PageRequest{Project: projectID, Name: dataPointID, From: from, To: to, Limit: limit})
	}
	id, found, err := h.datapoint(ctx, projectID, dataPointID)
	if err != nil || !found {
		return nil, err
	}
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	return h.Store.ReadPage(qctx, id, from, to, limit)
}

// datapoint is the row id of a datapoint; found is false for one that has
// no observation yet.
func (h StoreHistory) datapoint(ctx context.Context, projectID int64, dataPointID string) (int64, bool, error) {
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	dp, err := h.Store.Datapoint(qctx, projectID, dataPointID)
	if fault.Is(err, fault.NotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return dp.ID, true, nil
}

// windowHistory is what a pin's window holds just before at when it has
// seen every observation in time order, plus the one before that: the
// Count newest, or, for time and cron windows, everything since the
// window start of the newest one (Since taken at the newest observation,
// not at at: a time window slides with its data, not with the clock), of
// which a window keeps at most window.MaxObservations. The one more lets
// a stateful calculation (the gradient) see its last two inputs as they
// were.
func windowHistory(ctx context.Context, src History, project int64, s Source, at time.Time) ([]Point, error) {
	if s.Count > 0 {
		return src.Recent(ctx, project, s.DataPointID, s.Count+1, time.Time{}, at)
	}
	if s.Since == nil {
		return nil, nil
	}
	last, err := src.Recent(ctx, project, s.DataPointID, 1, time.Time{}, at)
	if err != nil || len(last) == 0 {
		return nil, err
	}
	return src.Recent(ctx, project, s.DataPointID, window.MaxObservations+1, s.Since(last[0].Time), at)
}
