-- +goose Up
-- Favorites and plot views of a user (issue 22 item 5; aedifion's
-- /v2/datapoint/favorite and /v2/project/{project_id}/plot-view). Every
-- row refers to its user, project and datapoints with ON DELETE CASCADE:
-- deleting a user deletes its favorites and plot views (api.md 4.2),
-- deleting a project or a datapoint deletes what refers to it.
CREATE TABLE datapoint_favorites (
    user_id      bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    datapoint_id bigint NOT NULL REFERENCES datapoints ON DELETE CASCADE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, datapoint_id)
);
CREATE INDEX datapoint_favorites_datapoint_idx ON datapoint_favorites (datapoint_id);

CREATE TABLE plot_views (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    project_id  bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    user_id     bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    name        text NOT NULL DEFAULT '',
    start_at    timestamptz NOT NULL,
    end_at      timestamptz NOT NULL CHECK (end_at > start_at),
    samplerate  text NOT NULL,
    zoom_start  timestamptz,
    zoom_end    timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX plot_views_project_user_idx ON plot_views (project_id, user_id);
CREATE INDEX plot_views_user_idx ON plot_views (user_id);

-- The datapoints of a plot view in their order; hidden ones are kept but
-- not drawn. A deleted datapoint leaves the views it was in.
CREATE TABLE plot_view_datapoints (
    view_id      uuid NOT NULL REFERENCES plot_views ON DELETE CASCADE,
    datapoint_id bigint NOT NULL REFERENCES datapoints ON DELETE CASCADE,
    position     int NOT NULL,
    hidden       boolean NOT NULL,
    PRIMARY KEY (view_id, datapoint_id)
);
CREATE INDEX plot_view_datapoints_datapoint_idx ON plot_view_datapoints (datapoint_id);

-- +goose Down
DROP TABLE plot_view_datapoints, plot_views, datapoint_favorites;
