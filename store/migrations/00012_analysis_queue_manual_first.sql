-- +goose Up
-- Runs requested by hand are claimed before the weekly batch: someone
-- waits for them, while a catch-up after a long outage can queue
-- thousands of weekly runs. Among runs queued at once (a catch-up), the
-- older period goes first, so the next week's run finds its result for
-- the summary instead of computing that week again. The queue's index
-- follows that order, so a claim stays an index range read however long
-- the queue.
DROP INDEX analysis_results_waiting;
CREATE INDEX analysis_results_waiting ON analysis_results (weekly, created_at, period_start) WHERE status = 'running';

-- +goose Down
DROP INDEX analysis_results_waiting;
CREATE INDEX analysis_results_waiting ON analysis_results (created_at) WHERE status = 'running';
