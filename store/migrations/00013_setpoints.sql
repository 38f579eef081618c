-- +goose Up
-- Acknowledged setpoint operations (api.md 2.12, 3.3) and their stages.
-- Unacknowledged writes keep no state (api.md 4.6 rule 5): they never
-- reach these tables. The reference is made by the platform, since the
-- same uuid travels to the edge device and back.
CREATE TABLE setpoint_operations (
    reference           uuid PRIMARY KEY,
    project_id          bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    datapoint_id        text NOT NULL,
    value               double precision, -- NULL clears the slot
    priority            integer NOT NULL CHECK (priority BETWEEN 1 AND 16),
    keep_out_of_service boolean NOT NULL DEFAULT false,
    acked               boolean NOT NULL,
    dryrun              boolean NOT NULL,
    state               text NOT NULL DEFAULT 'initialized'
                        CHECK (state IN ('initialized', 'requested', 'written', 'failed')),
    reason              text NOT NULL DEFAULT '',
    old_value           double precision, -- the slot's value before the write, once known
    source              text NOT NULL,    -- user:{id} or app:{id}
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX setpoint_operations_project ON setpoint_operations (project_id, created_at);
-- Operations a restart left unfinished are found without a scan.
CREATE INDEX setpoint_operations_open ON setpoint_operations (created_at)
    WHERE state IN ('initialized', 'requested');

CREATE TABLE setpoint_operation_logs (
    id        bigserial PRIMARY KEY,
    reference uuid NOT NULL REFERENCES setpoint_operations ON DELETE CASCADE,
    time      timestamptz NOT NULL,
    stage     text NOT NULL,
    msg       text NOT NULL DEFAULT '',
    details   jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX setpoint_operation_logs_reference ON setpoint_operation_logs (reference, id);

-- +goose Down
DROP TABLE setpoint_operation_logs;
DROP TABLE setpoint_operations;
