-- +goose Up
-- Virtual datapoints (api.md 2.10, 3.1): the configuration as the client
-- gave it with defaults filled in, and the current status; every status
-- change is a log row.
CREATE TABLE virtual_datapoints (
    id           bigserial PRIMARY KEY,
    project_id   bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    datapoint_id text NOT NULL,
    type         text NOT NULL,
    description  text NOT NULL DEFAULT '',
    config       jsonb NOT NULL,
    status_code  integer NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, datapoint_id)
);

CREATE TABLE virtual_datapoint_logs (
    id          bigserial PRIMARY KEY,
    vdp_id      bigint NOT NULL REFERENCES virtual_datapoints ON DELETE CASCADE,
    ts          bigint NOT NULL, -- unix nanoseconds, as the API shows it
    type        text NOT NULL,
    status_code integer NOT NULL,
    status_text text NOT NULL,
    message     text NOT NULL
);
CREATE INDEX virtual_datapoint_logs_vdp_idx ON virtual_datapoint_logs (vdp_id, id);

-- +goose Down
DROP TABLE virtual_datapoint_logs, virtual_datapoints;
