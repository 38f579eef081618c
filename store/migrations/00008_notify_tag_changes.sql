-- +goose Up
-- TagAuths match datapoint tags, so a change to tags changes what a user
-- may read or write, and with it what their MQTT users receive and may
-- publish (mqtt.Gate caches those decisions). It tells every server like a
-- change to roles does (migration 00006): 'roles' on bdp_credentials, from
-- the changing transaction.
CREATE TRIGGER datapoint_tags_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON datapoint_tags
    FOR EACH STATEMENT EXECUTE FUNCTION bdp_notify_roles_changed();

-- +goose Down
DROP TRIGGER datapoint_tags_notify ON datapoint_tags;
