-- +goose Up
-- Uploads in flight on several nodes (issue 20 item 6). Each process that
-- serves uploads takes an incarnation, a number never handed out twice,
-- and holds PostgreSQL's session advisory lock on it for its lifetime
-- (store.Incarnation); a reservation records the incarnation that made
-- it. The start-up repair releases a reservation only when no session
-- holds that lock: its process ended, crashed or was killed, whereas a
-- time cut-off also took the uploads other nodes were still writing.
CREATE SEQUENCE incarnations AS integer;

-- NULL: made before this migration, or by a process without an
-- incarnation (tools, older binaries): the repair goes by created_at.
ALTER TABLE file_reservations ADD COLUMN incarnation integer;

-- +goose Down
ALTER TABLE file_reservations DROP COLUMN incarnation;
DROP SEQUENCE incarnations;
