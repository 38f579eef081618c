package actors

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/store"
)

// DefaultResumeConcurrency is how many virtual datapoints Resume starts
// at once unless told otherwise (BDP_RESUME_CONCURRENCY). Each start
// reads history and then calculates; with the engine's reads batched
// (ReadBatcher), the starts in progress share a few queries, so many at
// once make few large queries rather than many small ones, while the
// database sees only ReadBatcher's few connections (100,000 datapoints of
// bdp-bench vdp's mix resumed in 72–80 s on 2 cores).
const DefaultResumeConcurrency = 256

// MaxResumeConcurrency bounds BDP_RESUME_CONCURRENCY.
const MaxResumeConcurrency = 4096

// Resume runs again every virtual datapoint that was Running (or
// Starting) when the platform stopped: a restart of bdp needs no operator
// action. It first marks them all Starting, then starts them, at most
// concurrency at once, each catching up on what it missed (Engine.CatchUp)
// and moving to Running once its windows are refilled, or to Start failed
// with the reason. The platform serves meanwhile: call it in the
// background. When ctx ends, the datapoints not yet started stay Starting,
// and the next start of the platform resumes them.
func Resume(ctx context.Context, e *Engine, st *store.Store, log *slog.Logger, concurrency int) error {
	vdps, err := st.MarkResuming(ctx, "resuming after a restart of the platform")
	if err != nil {
		return err
	}
	work := make(chan store.VDP)
	started := make(chan store.VDP, max(1, concurrency))
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		recordResumed(ctx, e, st, log, started)
	}()
	var wg sync.WaitGroup
	for range max(1, concurrency) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range work {
				if resumeOne(ctx, e, st, log, v) {
					started <- v
				}
			}
		}()
	}
	defer func() {
		close(work)
		wg.Wait()
		close(started)
		<-recorded
	}()
	for _, v := range vdps {
		select {
		case work <- v:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// resumeOne starts one virtual datapoint; true when it runs, for
// recordResumed to record. A failed start is recorded here, as Start
// failed with the reason.
func resumeOne(ctx context.Context, e *Engine, st *store.Store, log *slog.Logger, v store.VDP) bool {
	def, err := e.Definition(v.ProjectID, v.DataPointID, v.Type, v.Config)
	if err == nil {
		err = e.CatchUp(ctx, def, v.CatchUpFrom)
	}
	if ctx.Err() != nil {
		return false // shutting down: it stays Starting, for the next start
	}
	if err == nil {
		return true
	}
	attrs := []any{slog.Int64("project_id", v.ProjectID), slog.String("dataPointID", v.DataPointID)}
	log.Error("resume virtual datapoint", append(attrs, slog.Any("error", err))...)
	failed := store.StatusChange{Code: store.StatusStartFailed, Message: "resume after a restart: " + err.Error()}
	_, err = st.ChangeVDPStatus(ctx, v.ProjectID, v.DataPointID, failed, store.StatusStarting)
	if err != nil && !fault.Is(err, fault.Conflict) && !fault.Is(err, fault.NotFound) {
		log.Error("record failed resume of virtual datapoint", append(attrs, slog.Any("error", err))...)
	}
	return false
}

// recordResumed moves the started datapoints to Running, many in one
// statement (store.MarkResumed): whatever has started by the time the
// previous write is done, up to maxResumedRecord. One that someone moved
// out of Starting meanwhile (a stop, a delete) is stopped again: it must
// not run unseen.
func recordResumed(ctx context.Context, e *Engine, st *store.Store, log *slog.Logger, started <-chan store.VDP) {
	const maxResumedRecord = 1_000
	for first := range started {
		batch := []store.VDP{first}
	gather:
		for len(batch) < maxResumedRecord {
			select {
			case v, ok := <-started:
				if !ok {
					break gather
				}
				batch = append(batch, v)
			default:
				break gather
			}
		}
		moved, err := st.MarkResumed(ctx, batch, "resumed after a restart of the platform")
		if err != nil {
			if ctx.Err() == nil {
				log.Error("record resumed virtual datapoints", slog.Int("datapoints", len(batch)), slog.Any("error", err))
			}
			continue // they stay Starting, for the next start
		}
		running := make(map[Key]bool, len(moved))
		for _, v := range moved {
			running[Key{v.ProjectID, v.DataPointID}] = true
		}
		for _, v := range batch {
			if k := (Key{v.ProjectID, v.DataPointID}); !running[k] {
				if err := e.Stop(ctx, k); err != nil {
					log.Error("stop virtual datapoint", slog.Int64("project_id", v.ProjectID),
						slog.String("dataPointID", v.DataPointID), slog.Any("error", err))
				}
			}
		}
	}
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
