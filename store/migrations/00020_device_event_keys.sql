-- +goose Up
-- Edge devices' events are logged once (issue 20): in a cluster every
-- node hears every heartbeat and logs its events, so that one survives a
-- node killed at that moment; the key (kind and the device's time of
-- the event) makes the second and third insert of an event a no-op.
ALTER TABLE controls_app_logs ADD COLUMN event_key text;
CREATE UNIQUE INDEX controls_app_logs_event ON controls_app_logs (app_id, event_key) WHERE event_key IS NOT NULL;

-- +goose Down
DROP INDEX controls_app_logs_event;
ALTER TABLE controls_app_logs DROP COLUMN event_key;
