-- SLUID: Slurm's own unique id of a job run (25.11+; 24.11's text sacct prints it already),
-- kept beside JobIDRaw. Job ids repeat across clusters and after a slurmctld state loss, and a
-- requeued job keeps its job id but gets a new SLUID: the SLUID says which run a record is.
-- Nullable: 22.05 has none, and 24.11's hook environment does not carry it (sacct fills it).
-- The key stays `job` (several clusters and per-run keying are later migrations).
ALTER TABLE job ADD COLUMN sluid text;
COMMENT ON COLUMN job.sluid IS 'Slurm''s SLUID of the job (25.11+ hook env, 24.11+ sacct); NULL before';
