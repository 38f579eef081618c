-- +goose Up
-- Analysis functions, instances and results (api.md 2.14, 2.16, 2.17,
-- 4.8; decisions.md 8).
--
-- analysis_functions is upserted from the binary's function table at every
-- start by alphanumeric id, like the component catalog, so numeric ids
-- stay stable across restarts and releases.
CREATE TABLE analysis_functions (
    id              bigserial PRIMARY KEY,
    alphanumeric_id text NOT NULL UNIQUE CHECK (alphanumeric_id <> ''),
    name_de         text NOT NULL,
    name_en         text NOT NULL
);

-- One instance per function and mapped component (api.md 2.16).
CREATE TABLE analysis_instances (
    id                    bigserial PRIMARY KEY,
    project_id            bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    function_id           bigint NOT NULL REFERENCES analysis_functions,
    componentinproject_id bigint NOT NULL REFERENCES components_in_project ON DELETE CASCADE,
    name                  text NOT NULL DEFAULT '',
    description           text NOT NULL DEFAULT '',
    enabled               boolean NOT NULL DEFAULT false,
    created_at            timestamptz NOT NULL DEFAULT now(),
    UNIQUE (function_id, componentinproject_id)
);
CREATE INDEX analysis_instances_project ON analysis_instances (project_id, id);
CREATE INDEX analysis_instances_enabled ON analysis_instances (id) WHERE enabled;

-- A result row is also the run's place in the queue: it is written with
-- status 'running' before the run is handed to a worker, so a run accepted
-- by the API is never lost to a crash (a worker's claim older than the
-- run time limit is taken again at the next start), and workers on
-- several nodes share the queue through SELECT ... FOR UPDATE SKIP LOCKED.
CREATE TABLE analysis_results (
    id                uuid PRIMARY KEY,
    instance_id       bigint NOT NULL REFERENCES analysis_instances ON DELETE CASCADE,
    project_id        bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    period_start      timestamptz NOT NULL,
    period_end        timestamptz NOT NULL CHECK (period_start < period_end),
    weekly            boolean NOT NULL DEFAULT false, -- made by the weekly schedule, not by hand
    status            text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'Success', 'Failed')),
    info              text NOT NULL DEFAULT '',       -- why it failed; a note such as "no data"
    claimed_at        timestamptz,                    -- when a worker took it; NULL: waiting
    attempts          integer NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    analytics_version text NOT NULL DEFAULT '',
    outcome           jsonb                           -- analytics.Outcome of a Success
);
-- No week is ever run twice for an instance by the schedule, across
-- restarts and nodes: the key, not a flag in memory.
CREATE UNIQUE INDEX analysis_results_weekly ON analysis_results (instance_id, period_start) WHERE weekly;
CREATE INDEX analysis_results_instance ON analysis_results (instance_id, created_at DESC);
CREATE INDEX analysis_results_waiting ON analysis_results (created_at) WHERE status = 'running';

-- A new run wakes the workers of every node.
-- +goose StatementBegin
CREATE FUNCTION notify_analysis_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('bdp_analysis_runs', NEW.id::text);
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER analysis_results_notify AFTER INSERT ON analysis_results
    FOR EACH ROW WHEN (NEW.status = 'running') EXECUTE FUNCTION notify_analysis_run();

-- +goose Down
DROP TRIGGER analysis_results_notify ON analysis_results;
DROP FUNCTION notify_analysis_run();
DROP TABLE analysis_results;
DROP TABLE analysis_instances;
DROP TABLE analysis_functions;
