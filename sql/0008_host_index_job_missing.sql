-- The (host_id, ts_end, uid) index of jobstats_delta only for the rows that need it.
--
-- Its one query is attribution's recovery of `:uid:host` deltas (id_class 5 = JOB_MISSING,
-- slurm_io.attribute.sql.recovered_deltas): the deltas of a node, a uid and a time window whose
-- id names no job. Every other row (the ~90 % naming a job, found through jobstats_delta_job;
-- system, login-node and broken ids, read by time through the BRIN index) was indexed here for
-- nothing, and that was a third of the server's ingest work. Measured with the rows of the
-- ingest benchmark (bench/bench_ingest.py, 1M rows) sent as a pre-encoded COPY stream, i.e.
-- without any client work: 7.5 us of server CPU per row with the full index (median of 11
-- runs, 7.0-8.4), 4.9 us with this one (4.6-5.5), 55 bytes per row less on disk and 100 bytes
-- per row less WAL. The ingest target (>= 150k rows/s on 2 cores) is out of reach with the
-- full index: the server alone then tops out at ~130k rows/s.
--
-- The recovery query states `id_class = 5` as a constant so that the planner can match this
-- predicate (a bound parameter would hide it from a generic plan).
-- On a populated database DROP INDEX holds an ACCESS EXCLUSIVE lock on jobstats_delta until
-- the migration commits, so the new index is created `ON ONLY` the parent (no build here:
-- this transaction lasts milliseconds) and `jobio db upgrade` builds each partition's index
-- CONCURRENTLY after it (slurm_io/store/online_index.py); before this, building every
-- partition's index here made collectors wait for a scan of the whole table (1.2 s on
-- bench_show's 30 days of 2,000 nodes, growing with the table: bench/README.md,
-- "Migrations"). The DROP INDEX still takes ACCESS EXCLUSIVE on every partition until commit.
DROP INDEX jobstats_delta_host_ts;
CREATE INDEX jobstats_delta_host_ts ON ONLY jobstats_delta (host_id, ts_end, uid)
    WHERE id_class = 5;
