-- +goose Up
-- Where a running virtual datapoint's live calculation began, in event
-- time (actors.Engine.Start): after a crash, a datapoint with no output
-- stored since then catches up from here, so what was stored between its
-- run and the crash is calculated. NULL for one never run since.
ALTER TABLE virtual_datapoints ADD COLUMN catch_up_from timestamptz;

-- +goose Down
ALTER TABLE virtual_datapoints DROP COLUMN catch_up_from;
