-- +goose Up
-- Controls apps (api.md 2.13, 3.2, 4.6; decisions.md 8): an algorithm run
-- on a mapped component, with its status (the virtual datapoint table)
-- and its log. status_code is also the desired state: an app in Starting
-- or Running is started again when bdp serve starts.
CREATE TABLE controls_apps (
    id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    project_id            bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    componentinproject_id bigint NOT NULL REFERENCES components_in_project ON DELETE CASCADE,
    algorithm             text NOT NULL,
    variation             text NOT NULL DEFAULT '',
    name                  text NOT NULL DEFAULT '',
    description           text NOT NULL DEFAULT '',
    config                jsonb NOT NULL DEFAULT '{}',
    status_code           integer NOT NULL,
    created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX controls_apps_project ON controls_apps (project_id, created_at);
CREATE INDEX controls_apps_active ON controls_apps (status_code) WHERE status_code IN (200, 202);

-- What happened to an app: status changes, its writes and the device's
-- answers, newest by id.
CREATE TABLE controls_app_logs (
    id          bigserial PRIMARY KEY,
    app_id      uuid NOT NULL REFERENCES controls_apps ON DELETE CASCADE,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    log_level   text NOT NULL CHECK (log_level IN ('info', 'warning', 'error')),
    kind        text NOT NULL,
    status_code integer NOT NULL,
    message     text NOT NULL,
    detail      jsonb
);
CREATE INDEX controls_app_logs_app ON controls_app_logs (app_id, id);

-- One writer per datapoint and priority: the targets of the apps that
-- run (Starting, Running, Stopping). The primary key is the guard, so two
-- nodes starting two apps on one target cannot both win.
CREATE TABLE controls_app_targets (
    project_id   bigint NOT NULL,
    datapoint_id text NOT NULL,
    priority     integer NOT NULL,
    app_id       uuid NOT NULL REFERENCES controls_apps ON DELETE CASCADE,
    PRIMARY KEY (project_id, datapoint_id, priority)
);
CREATE INDEX controls_app_targets_app ON controls_app_targets (app_id);

-- +goose Down
DROP TABLE controls_app_targets;
DROP TABLE controls_app_logs;
DROP TABLE controls_apps;
