package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/openbdp/bdp/store"
)

// Resume starts the actor of every virtual datapoint that was Running (or
// Starting) when the platform stopped: a restart of bdp needs no operator
// action. Each one that cannot start is moved to Start failed with the
// reason.
func Resume(ctx context.Context, e *Engine, st *store.Store, log *slog.Logger) error {
	vdps, err := st.VDPsWithStatus(ctx, store.StatusRunning, store.StatusStarting)
	if err != nil {
		return err
	}
	for _, v := range vdps {
		def, err := e.Definition(v.ProjectID, v.DataPointID, v.Type, v.Config)
		if err == nil {
			err = e.Start(ctx, def)
		}
		next := store.StatusChange{Code: store.StatusRunning, Message: "resumed after a restart of the platform"}
		if err != nil {
			next = store.StatusChange{Code: store.StatusStartFailed, Message: "resume after a restart: " + err.Error()}
			log.Error("resume virtual datapoint", slog.Int64("project_id", v.ProjectID),
				slog.String("dataPointID", v.DataPointID), slog.Any("error", err))
		}
		if v.StatusCode != next.Code {
			if _, err := st.ChangeVDPStatus(ctx, v.ProjectID, v.DataPointID, next); err != nil {
				return err
			}
		}
	}
	return nil
}

// MarkUnhealthy is an OnUnhealthy that records Health check failed (304)
// with the reason in the datapoint's log.
func MarkUnhealthy(st *store.Store, log *slog.Logger) func(Key, string) {
	return func(k Key, reason string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := st.ChangeVDPStatus(ctx, k.ProjectID, k.DataPointID,
			store.StatusChange{Code: store.StatusHealthCheckFails, Message: reason})
		if err != nil {
			log.Error("record health check failure", slog.Int64("project_id", k.ProjectID),
				slog.String("dataPointID", k.DataPointID), slog.Any("error", err))
		}
	}
}

// LogCalcErrors is an OnCalcError that adds the error to the datapoint's
// logs (type calculation_error).
func LogCalcErrors(st *store.Store, log *slog.Logger) func(Key, error) {
	return func(k Key, calcErr error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		msg := "calculation emitted nothing: " + calcErr.Error()
		if err := st.AddVDPLog(ctx, k.ProjectID, k.DataPointID, "calculation_error", msg); err != nil {
			log.Error("record calculation error", slog.Int64("project_id", k.ProjectID),
				slog.String("dataPointID", k.DataPointID), slog.Any("error", err))
		}
	}
}
