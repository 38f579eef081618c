package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AnalysisFunctionRow is what the database keeps of an analysis function:
// the rest (components, pins, KPIs, the kernel) ships with the binary.
type AnalysisFunctionRow struct {
	AlphanumericID string
	NameDE, NameEN string
}

// SyncAnalysisFunctions upserts the binary's analysis functions by
// alphanumeric id and returns their numeric ids by alphanumeric id. A
// function keeps its id across calls and releases (instances reference
// it); one seen for the first time gets a new one. Functions a release no
// longer ships stay, so old instances and results keep their function.
// Safe from several nodes at once: the table lock serialises them.
func (s *Store) SyncAnalysisFunctions(ctx context.Context, rows []AnalysisFunctionRow) (map[string]int64, error) {
	ids := make(map[string]int64, len(rows))
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE analysis_functions IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, r := range rows {
			b.Queue(`INSERT INTO analysis_functions (alphanumeric_id, name_de, name_en) VALUES ($1, $2, $3)
				ON CONFLICT (alphanumeric_id) DO UPDATE SET name_de = EXCLUDED.name_de, name_en = EXCLUDED.name_en
				RETURNING id`, r.AlphanumericID, r.NameDE, r.NameEN).QueryRow(func(row pgx.Row) error {
				var id int64
				if err := row.Scan(&id); err != nil {
					return err
				}
				ids[r.AlphanumericID] = id
				return nil
			})
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("persist analysis functions: %w", err)
	}
	return ids, nil
}
