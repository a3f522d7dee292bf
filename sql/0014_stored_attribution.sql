-- Attribution computed once and stored (slurm_io.attribute): what every reader of a finished
-- job needs, so that `jobio show`, the mails, `jobio daily` and LASSi read the same figures
-- instead of applying the rules again.
--
-- job_io gains the provenance of its recovered part (the ambiguous part split by evidence or
-- by time, see docs/attribution.md), the part of intervals the job only partly covered, the
-- delta counts, and a revision counter: re-attribution after late data (a job's `:uid:host`
-- deltas ingested after its figures were stored) bumps it, so the change is visible.
ALTER TABLE job_io
    ADD COLUMN split        jsonb NOT NULL DEFAULT '{}',  -- part of totals from intervals the job only partly covered
    ADD COLUMN by_evidence  jsonb NOT NULL DEFAULT '{}',  -- part of `ambiguous` split by evidence
    ADD COLUMN by_time      jsonb NOT NULL DEFAULT '{}',  -- part of `ambiguous` split by time overlap
    ADD COLUMN n_direct     integer NOT NULL DEFAULT 0,   -- deltas naming the job
    ADD COLUMN n_recovered  integer NOT NULL DEFAULT 0,   -- `:uid:host` deltas it got a share of
    ADD COLUMN revision     integer NOT NULL DEFAULT 1,   -- 1 + number of times the figures changed
    ADD COLUMN data_until   timestamptz;                  -- newest batch ingest time considered

-- The entry's start_time (Lustre 2.15.2+: when it was created) where it lies inside the
-- delta's interval (the entry is new or re-created): nothing of the delta happened before it,
-- which narrows the interval attribution shares out (slurm_io.attribute.evidence.effective).
-- NULL otherwise (one bit), so it costs nothing on most rows.
ALTER TABLE jobstats_delta ADD COLUMN entry_start timestamptz;

-- Per job, hour (h, h + 1 h] of ts_end (long intervals spread evenly over their hours, as
-- LASSi does), filesystem and target kind: the job's attributed counters and their recovered
-- part. Kept for years (docs/storage.md) after the raw deltas are dropped.
CREATE TABLE job_io_hour (
    job        bigint NOT NULL REFERENCES job_io (job) ON DELETE CASCADE,  -- goes with its job_io
    hour       timestamptz NOT NULL,
    fs         text NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('MDT', 'OST', 'OTHER')),
    uid        integer,              -- copied from job, for row-level security
    totals     jsonb NOT NULL,       -- {counter: value}, direct + recovered
    recovered  jsonb NOT NULL,       -- the part from `:uid:host` deltas
    PRIMARY KEY (job, hour, fs, kind)
);
CREATE INDEX job_io_hour_hour ON job_io_hour (hour);

REVOKE ALL ON job_io_hour FROM PUBLIC;
ALTER TABLE job_io_hour ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_io_hour FORCE ROW LEVEL SECURITY;
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'jobio_user') THEN
        GRANT SELECT ON job_io_hour TO jobio_user, jobio_admin;
        GRANT SELECT, INSERT, UPDATE, DELETE ON job_io_hour TO jobio_collector;
        CREATE POLICY jobio_user_own ON job_io_hour FOR SELECT TO jobio_user
            USING (uid = (SELECT jobio_current_uid())
                   OR job IN (SELECT j.job FROM job j
                              WHERE j.uid = (SELECT jobio_current_uid())));
        CREATE POLICY jobio_admin_all ON job_io_hour FOR SELECT TO jobio_admin USING (true);
        CREATE POLICY jobio_collector_all ON job_io_hour FOR ALL TO jobio_collector
            USING (true) WITH CHECK (true);
    END IF;
END
$$;
