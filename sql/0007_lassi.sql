-- LASSi metrics per job and per filesystem per hour (slurm_io.lassi, docs/views.md), and a
-- BRIN index that lets `jobio top` fetch the last collector interval without scanning a day.
--
-- Hours are (hour, hour + 1 h] of ts_end, hour in UTC. Metric columns: read_kb, read_ops,
-- write_kb, write_ops, other (OST operations other than read/write) and md_<op> for the
-- metadata operations of slurm_io.lassi.metrics.MDS_METRICS. Values of jobs include their
-- pro-rata share of `:uid:host` deltas (attribution rules), hence double precision.

CREATE TABLE lassi_job_hour (
    hour         timestamptz NOT NULL,
    fs           text NOT NULL,
    job          bigint NOT NULL,
    uid          integer,                 -- for row-level security (the job's, or the ids')
    read_kb double precision NOT NULL DEFAULT 0, read_ops double precision NOT NULL DEFAULT 0,
    write_kb double precision NOT NULL DEFAULT 0, write_ops double precision NOT NULL DEFAULT 0,
    other double precision NOT NULL DEFAULT 0,
    md_open double precision NOT NULL DEFAULT 0, md_close double precision NOT NULL DEFAULT 0,
    md_mknod double precision NOT NULL DEFAULT 0, md_link double precision NOT NULL DEFAULT 0,
    md_unlink double precision NOT NULL DEFAULT 0, md_mkdir double precision NOT NULL DEFAULT 0,
    md_rmdir double precision NOT NULL DEFAULT 0, md_rename double precision NOT NULL DEFAULT 0,
    md_getattr double precision NOT NULL DEFAULT 0,
    md_setattr double precision NOT NULL DEFAULT 0,
    md_getxattr double precision NOT NULL DEFAULT 0,
    md_setxattr double precision NOT NULL DEFAULT 0,
    md_statfs double precision NOT NULL DEFAULT 0, md_sync double precision NOT NULL DEFAULT 0,
    risk_oss     double precision NOT NULL,
    risk_mds     double precision NOT NULL,
    read_kb_ops  double precision,        -- NULL: no reads that hour
    write_kb_ops double precision,
    risks        jsonb NOT NULL,          -- {metric: positive risk}: what made the hour risky
    PRIMARY KEY (hour, fs, job)
);
CREATE INDEX lassi_job_hour_job ON lassi_job_hour (job);

CREATE TABLE lassi_fs_hour (
    hour         timestamptz NOT NULL,
    fs           text NOT NULL,
    read_kb double precision NOT NULL DEFAULT 0, read_ops double precision NOT NULL DEFAULT 0,
    write_kb double precision NOT NULL DEFAULT 0, write_ops double precision NOT NULL DEFAULT 0,
    other double precision NOT NULL DEFAULT 0,
    md_open double precision NOT NULL DEFAULT 0, md_close double precision NOT NULL DEFAULT 0,
    md_mknod double precision NOT NULL DEFAULT 0, md_link double precision NOT NULL DEFAULT 0,
    md_unlink double precision NOT NULL DEFAULT 0, md_mkdir double precision NOT NULL DEFAULT 0,
    md_rmdir double precision NOT NULL DEFAULT 0, md_rename double precision NOT NULL DEFAULT 0,
    md_getattr double precision NOT NULL DEFAULT 0,
    md_setattr double precision NOT NULL DEFAULT 0,
    md_getxattr double precision NOT NULL DEFAULT 0,
    md_setxattr double precision NOT NULL DEFAULT 0,
    md_statfs double precision NOT NULL DEFAULT 0, md_sync double precision NOT NULL DEFAULT 0,
    risk_oss     double precision NOT NULL,
    risk_mds     double precision NOT NULL,
    read_kb_ops  double precision,
    write_kb_ops double precision,
    risks        jsonb NOT NULL,
    n_jobs       integer NOT NULL,        -- jobs with I/O on the filesystem that hour
    PRIMARY KEY (hour, fs)
);

-- One row per (filesystem, day) computed: the parameters and baseline averages used.
CREATE TABLE lassi_day (
    fs             text NOT NULL,
    day            date NOT NULL,
    computed_at    timestamptz NOT NULL DEFAULT now(),
    a              double precision NOT NULL,
    baseline_from  timestamptz NOT NULL,
    baseline_to    timestamptz NOT NULL,
    baseline_hours integer NOT NULL,      -- filesystem hours found in the baseline window
    job_avg        jsonb NOT NULL,        -- {metric: avg over job hours} (what was used)
    fs_avg         jsonb NOT NULL,        -- {metric: avg over filesystem hours}
    own_metrics    text[] NOT NULL,       -- metrics averaged over the day itself (no history)
    PRIMARY KEY (fs, day)
);

-- `jobio top`: the rows of one collector interval. Rows arrive in ts_end order, so a small
-- BRIN index finds them in a few pages and costs next to nothing at ingest (created on every
-- partition, and on the ones attached later). `ON ONLY`: on a populated database `jobio db
-- upgrade` builds the partitions' BRIN indexes CONCURRENTLY after this migration commits
-- (slurm_io/store/online_index.py) instead of under a SHARE lock that stops every COPY.
CREATE INDEX jobstats_delta_ts_brin ON ONLY jobstats_delta USING brin (ts_end)
    WITH (pages_per_range = 16);

-- Privacy as for job_io (sql/0004_privacy.sql): users see the hours of their own jobs; the
-- filesystem-wide tables hold no per-user data and are readable by every jobio role.
REVOKE ALL ON lassi_job_hour, lassi_fs_hour, lassi_day FROM PUBLIC;
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'jobio_user') THEN
        GRANT SELECT ON lassi_job_hour, lassi_fs_hour, lassi_day TO jobio_user, jobio_admin;
        GRANT SELECT, INSERT, UPDATE, DELETE ON lassi_job_hour, lassi_fs_hour, lassi_day
            TO jobio_collector;
        ALTER TABLE lassi_job_hour ENABLE ROW LEVEL SECURITY;
        ALTER TABLE lassi_job_hour FORCE ROW LEVEL SECURITY;
        CREATE POLICY jobio_user_own ON lassi_job_hour FOR SELECT TO jobio_user
            USING (uid = (SELECT jobio_current_uid())
                   OR job IN (SELECT j.job FROM job j
                              WHERE j.uid = (SELECT jobio_current_uid())));
        CREATE POLICY jobio_admin_all ON lassi_job_hour FOR SELECT TO jobio_admin
            USING (true);
        CREATE POLICY jobio_collector_all ON lassi_job_hour FOR ALL TO jobio_collector
            USING (true) WITH CHECK (true);
    END IF;
END
$$;
