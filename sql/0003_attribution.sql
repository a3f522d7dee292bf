-- Attributed I/O per job, computed from jobstats_delta + job/job_node (slurm_io.attribute).
-- One row per job; the figures are jsonb because their shape (counters by Lustre name, per
-- target, per node, timeline) follows the Lustre releases in use and is read whole by
-- `jobio show`, the mails and the reports.

CREATE TABLE job_io (
    job          bigint PRIMARY KEY REFERENCES job (job) ON DELETE CASCADE,
    uid          integer,                 -- copied from job, for row-level security
    computed_at  timestamptz NOT NULL DEFAULT now(),
    complete     boolean NOT NULL,        -- job ended and every collector has read past its end
    totals       jsonb NOT NULL,          -- {counter: value} (direct + recovered shares)
    recovered    jsonb NOT NULL,          -- part of totals from `:uid:host` entries
    ambiguous    jsonb NOT NULL,          -- part of totals split between concurrent jobs
    by_target    jsonb NOT NULL,          -- {target: {counter: value}}
    by_node      jsonb NOT NULL,          -- {node: {counter: value}}
    timeline     jsonb NOT NULL,          -- [[ts_end epoch, read_bytes, write_bytes, meta ops]]
    quality      jsonb NOT NULL           -- mean sizes, small-I/O share, LASSi ops metrics
);
CREATE INDEX job_io_uid ON job_io (uid);
