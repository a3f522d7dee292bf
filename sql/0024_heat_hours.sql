-- writers-from: 21
-- The daily heat map's counts per closed hour (slurm_io/report/heat_hours.py, bench/README.md
-- "A day at a site"): `jobio daily` grouped a site's ~19.5 M (series, interval) sums a day
-- from every spread delta (~150 s of the fullest day); it now stores, per UTC hour, how many
-- series fell in each (metric, interval, log bin) at the collector period, and reads a day as
-- its 24 hours' counts -- the same figures (tests/views/test_heat_hours.py).
--
-- An hour's counts are made from the deltas with ts_end in (hour, hour + 1 h] and record what
-- they covered: the ingest batches whose read_time (= their deltas' ts_end) falls in that
-- range, as (count, newest ingested_at). A batch that comes later for the hour (late data, a
-- spooled batch replayed, a restore) changes that pair, and the hour is made again. An hour
-- whose deltas reach back into an earlier hour (a delta longer than 1.5 intervals, spread over
-- the intervals it spans) says so in `reach`: the report then reads those hours from the
-- deltas together, as before.
--
-- Additive only: older writers (from 21 on) go on; they neither read nor write these tables,
-- and their batches are seen by the covering pair like any other.

CREATE TABLE heat_hour (
    hour        timestamptz NOT NULL,   -- the hour's intervals (b * width, +width] start in it
    width       double precision NOT NULL,  -- interval width, s (the collector period)
    base        double precision NOT NULL,  -- log bins [base^k, base^(k+1))
    day_first   bigint NOT NULL,        -- the day's first interval index the deltas spread from
    batches     bigint NOT NULL,        -- ingest batches with read_time in (hour, hour + 1 h]
    newest      timestamptz,            -- their newest ingested_at (NULL: none)
    reach       bigint,                 -- the first interval the hour's deltas spread to
    made_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hour, width, base)
);

CREATE TABLE heat_hour_count (
    hour        timestamptz NOT NULL,
    width       double precision NOT NULL,
    base        double precision NOT NULL,
    metric      text NOT NULL,          -- 'read', 'write', 'meta'
    b           bigint NOT NULL,        -- interval index: (b * width, (b + 1) * width]
    k           integer NOT NULL,       -- log bin
    n           bigint NOT NULL,        -- series with the metric's rate in the bin
    FOREIGN KEY (hour, width, base) REFERENCES heat_hour ON DELETE CASCADE
);
CREATE INDEX heat_hour_count_hour ON heat_hour_count (hour, width, base);

-- Counts of series, no per-user data: readable by every jobio role, as lassi_fs_hour
-- (sql/0007); written by `jobio daily` and `jobio db pack` (the collector role).
REVOKE ALL ON heat_hour, heat_hour_count FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'jobio_user') THEN
        GRANT SELECT ON heat_hour, heat_hour_count TO jobio_user, jobio_admin;
        GRANT SELECT, INSERT, UPDATE, DELETE ON heat_hour, heat_hour_count
            TO jobio_collector;
    END IF;
END
$$;
