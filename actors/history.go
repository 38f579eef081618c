package actors

import (
	"context"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// StoreHistory reads window history from PostgreSQL.
type StoreHistory struct {
	Store *store.Store
}

var _ History = StoreHistory{}

// Recent implements History.
func (h StoreHistory) Recent(ctx context.Context, projectID int64, dataPointID string, count int, since, end time.Time) ([]Point, error) {
	dp, err := h.Store.Datapoint(ctx, projectID, dataPointID)
	if fault.Is(err, fault.NotFound) {
		return nil, nil // no observation yet: an empty window
	}
	if err != nil {
		return nil, err
	}
	q := store.ReadQuery{Start: since, End: end}
	if count > 0 {
		q = store.ReadQuery{End: end, Max: count}
	}
	rows, err := h.Store.ReadObservations(ctx, dp.ID, q)
	if err != nil {
		return nil, err
	}
	pts := make([]Point, len(rows))
	for i, r := range rows {
		pts[i] = Point{Time: r.Time, Value: r.Value}
	}
	return pts, nil
}
