-- Slurm job records (sacct import/sync, the job-end hook, pyslurm) and their nodes.

CREATE TABLE job (
    job          bigint PRIMARY KEY,          -- JobIDRaw = SLURM_JOB_ID = Lustre's %j
    jobid        text NOT NULL,               -- display id: 123, 5_1
    array_job    bigint,                      -- array master (the 5 of 5_1)
    array_task   text,                        -- task id (the 1 of 5_1)
    uid          integer,
    user_name    text,
    account      text,
    partition    text,
    name         text,
    nodes        text[] NOT NULL DEFAULT '{}',-- expanded short host names
    submit       timestamptz,
    start_time   timestamptz,
    end_time     timestamptz,                 -- NULL while running or unknown
    state        text,
    exit_code    text,
    work_dir     text,
    submit_line  text,
    source       text NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_jobid ON job (jobid);
CREATE INDEX job_array ON job (array_job) WHERE array_job IS NOT NULL;
CREATE INDEX job_uid_start ON job (uid, start_time);
CREATE INDEX job_end ON job (end_time);

-- Which jobs ran on which node: recovery of `:uid:host` entries asks "which jobs of this uid
-- ran on this node during this interval", and must know when two of them did.
CREATE TABLE job_node (
    host_id      integer NOT NULL REFERENCES host (host_id),
    job          bigint NOT NULL REFERENCES job (job) ON DELETE CASCADE,
    uid          integer,
    start_time   timestamptz,
    end_time     timestamptz,                 -- NULL while running
    PRIMARY KEY (host_id, job)
);
CREATE INDEX job_node_host_uid ON job_node (host_id, uid, start_time);
CREATE INDEX job_node_job ON job_node (job);
