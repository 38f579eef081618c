-- +goose Up
-- Sealed observations (issue 21, store/chunks.go): one row per run of up
-- to 16,384 points of one datapoint within one week (Monday 00:00 UTC),
-- encoded and compressed by store/chunkenc. The head (observations) keeps
-- the open weeks and every late write; the sealer moves closed weeks here,
-- deleting each row in the transaction that puts it into a chunk.
CREATE TABLE observation_chunks (
    datapoint  bigint NOT NULL,
    first_time timestamptz NOT NULL,
    last_time  timestamptz NOT NULL,
    n          integer NOT NULL CHECK (n > 0),
    data       bytea NOT NULL,
    PRIMARY KEY (datapoint, first_time)
);
-- The chunks are compressed already: TOAST moves them out of line but
-- does not compress them again.
ALTER TABLE observation_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- +goose Down
DROP TABLE observation_chunks;
