-- Jobs keyed by cluster, job id and run (docs/jobs.md "Several clusters, requeued runs").
--
-- Two Slurm clusters mounting one Lustre filesystem both number their jobs from 1, and a
-- requeued job keeps its job id for a new run. `job.job` stays the bigint row key that
-- job_node, job_io, job_io_hour, report_queue, lassi_job_hour and alert_log reference, but it
-- becomes a surrogate: `job_raw` is JobIDRaw (what Lustre's %j and jobstats_delta.job hold),
-- `cluster` the ClusterName, `run` 0 for a job's first run, 1 after its first requeue, ...
-- Existing rows keep their key (= their raw id, so nothing that references them changes) and
-- get the default cluster; new rows take keys from a sequence that starts above 2^32, so a
-- key never passes for a raw id and a query that confuses the two finds nothing.
--
-- The default cluster (records that carry none: old sacct text, pyslurm) is kept in the
-- database so every writer (hook, sync, import) agrees: `jobio db upgrade` sets it from the
-- config's `cluster` (GUC jobio.cluster during the upgrade), else 'default'.
CREATE TABLE jobio_setting (
    name   text PRIMARY KEY,
    value  text NOT NULL
);
INSERT INTO jobio_setting (name, value)
VALUES ('cluster', coalesce(nullif(current_setting('jobio.cluster', true), ''), 'default'));
GRANT SELECT ON jobio_setting TO jobio_user, jobio_admin, jobio_collector;

ALTER TABLE job ADD COLUMN cluster text, ADD COLUMN job_raw bigint,
    ADD COLUMN run integer NOT NULL DEFAULT 0;
UPDATE job SET cluster = (SELECT value FROM jobio_setting WHERE name = 'cluster'), job_raw = job;
ALTER TABLE job ALTER COLUMN cluster SET NOT NULL, ALTER COLUMN job_raw SET NOT NULL;
ALTER TABLE job ADD CONSTRAINT job_cluster_raw_run UNIQUE (cluster, job_raw, run);
CREATE INDEX job_raw_idx ON job (job_raw);
COMMENT ON COLUMN job.job IS 'row key: the raw id for rows from before 0020, else > 2^32';
COMMENT ON COLUMN job.job_raw IS 'JobIDRaw = SLURM_JOB_ID = Lustre''s %j';
COMMENT ON COLUMN job.run IS '0: first run; n: after the n-th requeue';

-- A writer from before 0020 (INSERT naming `job` only) keeps working: its row's key is its
-- raw id, in the default cluster, as every existing row's is.
CREATE FUNCTION jobio_job_defaults() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.job_raw := coalesce(NEW.job_raw, NEW.job);
    NEW.cluster := coalesce(NEW.cluster,
                            (SELECT value FROM jobio_setting WHERE name = 'cluster'));
    RETURN NEW;
END
$$;
CREATE TRIGGER job_defaults BEFORE INSERT ON job FOR EACH ROW
    WHEN (NEW.job_raw IS NULL OR NEW.cluster IS NULL) EXECUTE FUNCTION jobio_job_defaults();

CREATE SEQUENCE job_key_seq AS bigint START WITH 4294967296 OWNED BY job.job;
ALTER TABLE job ALTER COLUMN job SET DEFAULT nextval('job_key_seq');
GRANT USAGE, SELECT ON SEQUENCE job_key_seq TO jobio_collector;

-- The nodes each cluster's jobs ran on: a delta naming a job id that several clusters used is
-- the job's of the cluster its node belongs to (attribute.clusters). Filled by the job upsert.
CREATE TABLE cluster_host (
    cluster  text NOT NULL,
    host_id  integer NOT NULL REFERENCES host (host_id),
    PRIMARY KEY (cluster, host_id)
);
INSERT INTO cluster_host (cluster, host_id)
SELECT DISTINCT j.cluster, h.host_id FROM job j CROSS JOIN LATERAL unnest(j.nodes) AS n(name)
JOIN host h ON h.name = n.name;
GRANT SELECT ON cluster_host TO jobio_user, jobio_admin;
GRANT SELECT, INSERT ON cluster_host TO jobio_collector;

-- A delta names a raw id now, not a row key.
DROP POLICY jobio_user_own ON jobstats_delta;
CREATE POLICY jobio_user_own ON jobstats_delta FOR SELECT TO jobio_user
    USING (uid = (SELECT jobio_current_uid())
           OR job IN (SELECT j.job_raw FROM job j WHERE j.uid = (SELECT jobio_current_uid())));
