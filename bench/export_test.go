package bench

import (
	"context"
	"strings"
	"testing"
)

// Rows that cannot hold a 30-day hourly query with a start to choose are
// refused before anything starts (43,200 rows made the query's random
// start panic).
func TestExportRefusesTooFewRows(t *testing.T) {
	for _, rows := range []int{30 * 24 * 60, minExportRows - 1} {
		_, err := Export(context.Background(), ExportOptions{Binary: "/nonexistent/bdp", Datapoints: 1, Rows: rows})
		if err == nil || !strings.Contains(err.Error(), "30 days and 2 hours") {
			t.Errorf("rows %d: %v, want the refusal naming the minimum", rows, err)
		}
	}
}
