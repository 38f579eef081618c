-- +goose Up
-- An acked dry run ends in 'reported', not 'written': the device reported
-- the datapoint's state and nothing was written (api.md 4.6 rule 6).
-- Dry runs recorded before as written are told apart the same way.
ALTER TABLE setpoint_operations DROP CONSTRAINT setpoint_operations_state_check,
    ADD CONSTRAINT setpoint_operations_state_check
    CHECK (state IN ('initialized', 'requested', 'written', 'reported', 'failed'));
UPDATE setpoint_operation_logs l SET stage = 'reported',
    msg = 'dry run: the edge device reported the datapoint''s state; nothing was written'
    FROM setpoint_operations o
    WHERE l.reference = o.reference AND o.dryrun AND l.stage = 'written';
UPDATE setpoint_operations SET state = 'reported' WHERE dryrun AND state = 'written';

-- +goose Down
UPDATE setpoint_operation_logs l SET stage = 'written'
    FROM setpoint_operations o
    WHERE l.reference = o.reference AND o.dryrun AND l.stage = 'reported';
UPDATE setpoint_operations SET state = 'written' WHERE state = 'reported';
ALTER TABLE setpoint_operations DROP CONSTRAINT setpoint_operations_state_check,
    ADD CONSTRAINT setpoint_operations_state_check
    CHECK (state IN ('initialized', 'requested', 'written', 'failed'));
