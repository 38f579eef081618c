package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/jackc/pgx/v5"
)

// ProjectSettings returns the operator settings of a project.
func (s *Store) ProjectSettings(ctx context.Context, projectID int64) (ProjectSettings, error) {
	var ps ProjectSettings
	err := s.pool.QueryRow(ctx, `
		SELECT setpoint_writing_enabled, setpoint_max_priority, autosampling_n, units_system, currency_system
		FROM project_settings WHERE project_id = $1`, projectID).
		Scan(&ps.SetpointWritingEnabled, &ps.SetpointMaxPriority, &ps.AutosamplingN, &ps.UnitsSystem, &ps.CurrencySystem)
	return ps, translate(err, "project")
}

// SettingsPatch holds the settings to change; nil keeps a setting.
type SettingsPatch struct {
	SetpointWritingEnabled *bool
	SetpointMaxPriority    *int
	AutosamplingN          *int
	UnitsSystem            *string
	CurrencySystem         *string
}

// UpdateProjectSettings changes the given settings and returns all of them.
func (s *Store) UpdateProjectSettings(ctx context.Context, projectID int64, p SettingsPatch) (ProjectSettings, error) {
	var ps ProjectSettings
	err := s.pool.QueryRow(ctx, `
		UPDATE project_settings SET
			setpoint_writing_enabled = COALESCE($2, setpoint_writing_enabled),
			setpoint_max_priority    = COALESCE($3, setpoint_max_priority),
			autosampling_n           = COALESCE($4, autosampling_n),
			units_system             = COALESCE($5, units_system),
			currency_system          = COALESCE($6, currency_system)
		WHERE project_id = $1
		RETURNING setpoint_writing_enabled, setpoint_max_priority, autosampling_n, units_system, currency_system`,
		projectID, p.SetpointWritingEnabled, p.SetpointMaxPriority, p.AutosamplingN, p.UnitsSystem, p.CurrencySystem).
		Scan(&ps.SetpointWritingEnabled, &ps.SetpointMaxPriority, &ps.AutosamplingN, &ps.UnitsSystem, &ps.CurrencySystem)
	return ps, translate(err, "project settings")
}

// QuotaPatch holds the quota limits to change; nil keeps a limit.
type QuotaPatch struct {
	Files, SpaceBytes, FileSizeBytes *int64
}

// UpdateCompanyQuota changes a company's file store limits, creating the
// row with defaults first if needed.
func (s *Store) UpdateCompanyQuota(ctx context.Context, companyID int64, p QuotaPatch) (Quota, error) {
	return s.updateQuota(ctx, "company_quotas", "company_id", companyID, p)
}

// UpdateProjectQuota changes a project's file store limits.
func (s *Store) UpdateProjectQuota(ctx context.Context, projectID int64, p QuotaPatch) (Quota, error) {
	return s.updateQuota(ctx, "project_quotas", "project_id", projectID, p)
}

// updateQuota is shared by both quota tables; table and column are
// constants of this file, never client input. The parameters are cast to
// bigint: typed by the integer literals beside them they would be int4,
// and a quota above 2^31-1 would fail to encode (a 500).
func (s *Store) updateQuota(ctx context.Context, table, column string, id int64, p QuotaPatch) (Quota, error) {
	var q Quota
	err := s.pool.QueryRow(ctx, `
		INSERT INTO `+table+` AS q (`+column+`, files, space_bytes, file_size_bytes)
		VALUES ($1, COALESCE($2::bigint, 1000), COALESCE($3::bigint, 1073741824), COALESCE($4::bigint, 104857600))
		ON CONFLICT (`+column+`) DO UPDATE SET
			files           = COALESCE($2, q.files),
			space_bytes     = COALESCE($3, q.space_bytes),
			file_size_bytes = COALESCE($4, q.file_size_bytes)
		RETURNING files, space_bytes, file_size_bytes`,
		id, p.Files, p.SpaceBytes, p.FileSizeBytes).Scan(&q.Files, &q.SpaceBytes, &q.FileSizeBytes)
	return q, translate(err, "quota")
}

// SetSystemTags sets the system tags of a datapoint, creating the
// datapoint if it does not exist yet. Tags not named stay as they are.
func (s *Store) SetSystemTags(ctx context.Context, projectID int64, dataPointID string, tags []DatapointTag) ([]DatapointTag, error) {
	var out []DatapointTag
	err := s.tx(ctx, func(tx pgx.Tx) error {
		dp, err := ensureDatapoint(ctx, tx, projectID, dataPointID)
		if err != nil {
			return err
		}
		for _, t := range tags {
			_, err := tx.Exec(ctx, `
				INSERT INTO datapoint_tags (datapoint_id, key, value, source) VALUES ($1, $2, $3, 'system')
				ON CONFLICT (datapoint_id, source, key) DO UPDATE SET value = EXCLUDED.value`, dp, t.Key, t.Value)
			if err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT id, key, value, source FROM datapoint_tags
			WHERE datapoint_id = $1 AND source = 'system' ORDER BY key`, dp)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[DatapointTag])
		return err
	})
	return out, translate(err, "datapoint")
}

// ensureDatapoint returns the row id of a datapoint, creating it with a
// fresh hash id when it does not exist.
func ensureDatapoint(ctx context.Context, tx pgx.Tx, projectID int64, dataPointID string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `
		INSERT INTO datapoints (project_id, datapoint_id, hash_id) VALUES ($1, $2, $3)
		ON CONFLICT (project_id, datapoint_id) DO UPDATE SET datapoint_id = EXCLUDED.datapoint_id
		RETURNING id`, projectID, dataPointID, newHashID()).Scan(&id)
	return id, err
}

// newHashID is a short random id that does not reveal row counts.
func newHashID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Secret returns the named platform secret, generating and storing it with
// gen the first time. Nodes starting together agree on one value.
func (s *Store) Secret(ctx context.Context, name string, gen func() []byte) ([]byte, error) {
	if _, err := s.pool.Exec(ctx, `INSERT INTO platform_secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING`, name, gen()); err != nil {
		return nil, err
	}
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM platform_secrets WHERE name = $1`, name).Scan(&v)
	return v, err
}
