-- +goose Up
-- The fence of a project's edge connection (issue 20 item 5). In a
-- cluster one member runs a project's connection, but during a change of
-- membership two may briefly believe they do. The member that starts the
-- connection takes the hold (token + 1); a request to the device is
-- published, and an acked setpoint operation recorded, only while the
-- sender's token is the project's current one, so a superseded holder's
-- writes are refused rather than reach the device a second time.
CREATE TABLE edge_holders (
    project_id bigint PRIMARY KEY REFERENCES projects ON DELETE CASCADE,
    holder     text NOT NULL,   -- the node (BDP_NODE_ID; "single" for one node)
    token      bigint NOT NULL, -- raised by every take-over, never reused
    since      timestamptz NOT NULL DEFAULT now()
);

-- The token under which an operation was recorded: an open operation of
-- a superseded token has nobody following it any more (its holder was
-- replaced or restarted), so the next holder fails it. NULL: recorded
-- before this migration, or without a connection (tools).
ALTER TABLE setpoint_operations ADD COLUMN hold_token bigint;

-- +goose Down
ALTER TABLE setpoint_operations DROP COLUMN hold_token;
DROP TABLE edge_holders;
