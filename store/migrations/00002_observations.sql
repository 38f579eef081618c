-- +goose Up
-- Observations, partitioned by week (Monday 00:00 UTC). The primary key
-- carries the value so reads of a datapoint's range are index-only.
-- No foreign key to datapoints: checking one per row would slow ingestion,
-- and DeleteProject removes the observations of its datapoints itself.
CREATE TABLE observations (
    datapoint bigint NOT NULL,
    time      timestamptz NOT NULL,
    value     double precision NOT NULL,
    PRIMARY KEY (datapoint, time) INCLUDE (value)
) PARTITION BY RANGE (time);

-- +goose Down
DROP TABLE observations;
