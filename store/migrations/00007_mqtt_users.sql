-- +goose Up
-- Short-lived MQTT credentials of a project (api.md 4.4) and the edge
-- device's long-lived ones (decisions.md 2). The broker namespace is one
-- for the whole platform, so usernames are unique across projects.
CREATE TABLE mqtt_users (
    id            bigserial PRIMARY KEY,
    project_id    bigint NOT NULL REFERENCES projects ON DELETE CASCADE,
    username      text NOT NULL UNIQUE CHECK (username <> ''),
    password_hash text NOT NULL,
    rights        text NOT NULL CHECK (rights IN ('read', 'write')),
    description   text NOT NULL DEFAULT '',
    -- NULL: no expiry (edge credentials only).
    valid_until   timestamptz,
    -- The creator, whose TagAuths bound what the MQTT user sees; a user
    -- deleted takes their MQTT users along. NULL for edge credentials.
    created_by    bigint REFERENCES users ON DELETE CASCADE,
    edge          boolean NOT NULL DEFAULT false,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (edge = (created_by IS NULL)),
    CHECK (NOT edge OR valid_until IS NULL)
);
CREATE INDEX mqtt_users_project_idx ON mqtt_users (project_id);
-- The next expiry is the smallest valid_until (one timer, not a poll).
CREATE INDEX mqtt_users_valid_until_idx ON mqtt_users (valid_until) WHERE valid_until IS NOT NULL;
-- At most one set of edge credentials per project.
CREATE UNIQUE INDEX mqtt_users_edge_key ON mqtt_users (project_id) WHERE edge;
CREATE INDEX mqtt_users_created_by_idx ON mqtt_users (created_by);

-- Every change tells the MQTT layer of every server, on channel
-- bdp_mqtt_users with the row id, from within the changing transaction
-- (as 00006 does for credentials): delivered at commit, never for a
-- rolled-back change, whoever made it. A deleted or changed row makes the
-- broker drop its sessions and re-arm its expiry timer.

-- +goose StatementBegin
CREATE FUNCTION bdp_notify_mqtt_user_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('bdp_mqtt_users', OLD.id::text);
    ELSE
        PERFORM pg_notify('bdp_mqtt_users', NEW.id::text);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER mqtt_users_changed_notify AFTER INSERT OR UPDATE OR DELETE ON mqtt_users
    FOR EACH ROW EXECUTE FUNCTION bdp_notify_mqtt_user_changed();

-- +goose Down
DROP TRIGGER mqtt_users_changed_notify ON mqtt_users;
DROP FUNCTION bdp_notify_mqtt_user_changed();
DROP TABLE mqtt_users;
