-- The packed tier of the raw deltas (slurm_io/store/tiers.py, docs/storage.md "Two tiers of raw
-- deltas"): `jobio db pack` moves the deltas of closed hours out of jobstats_delta into one
-- row per (entry, UTC hour) -- the entry being the printed id and its classification -- with
-- each column of the hour's deltas in an array, in the same element order (by target, then
-- ts_end). A row is one TOASTed, compressed tuple instead of ~10-300 heap rows of ~150 bytes
-- with their index entries: the arrays of one entry's hour repeat themselves (the same read
-- times on every target of a server, sizes that are multiples of each other).
--
-- Every column of jobstats_delta is kept, so every figure can be computed from it: readers
-- read both tiers through slurm_io.store.tiers (one UNION ALL, the same row shape).
--
-- Partitioned by day of `hour` like jobstats_delta by day of ts_end (the same UTC days: an
-- hour lies in the day of its deltas), so `jobio db prune` drops both whole. No unique
-- constraint (none could hold across partitions, nor without the distribution key `job`,
-- issue 26 item 4): exactly-once comes from packing in one statement that deletes what it
-- packs (store/tiers_pack.py).
--
-- Older releases must not write after this one: their attribution reads jobstats_delta only and
-- would store figures without the packed hours (wrong, silently). So no older writer goes on
-- (their collectors spool until upgraded, losing nothing):
-- writers-from: 21

CREATE TABLE jobstats_packed (
    hour        timestamptz NOT NULL,   -- every element's ts_end is in [hour, hour + 1 h)
    job         bigint,                 -- the classification of the entry (jobstats_delta's)
    id_class    smallint NOT NULL,
    uid         integer,
    host_id     integer,
    raw_id      text NOT NULL,
    n           integer NOT NULL,       -- elements (deltas) in each array
    target_id   integer[] NOT NULL,
    ts_end      timestamptz[] NOT NULL,
    ts_start    timestamptz[] NOT NULL,
    last_update timestamptz[],          -- NULL: no element has one (likewise below)
    flags       smallint[],             -- NULL: all 0
    entry_start timestamptz[],
    read_bytes bigint[],
    read_bytes_samples bigint[],
    read_bytes_sumsq double precision[],
    read_bytes_min bigint[],
    read_bytes_max bigint[],
    read_bytes_hist jsonb[],
    write_bytes bigint[],
    write_bytes_samples bigint[],
    write_bytes_sumsq double precision[],
    write_bytes_min bigint[],
    write_bytes_max bigint[],
    write_bytes_hist jsonb[],
    op_open bigint[],
    op_close bigint[],
    op_mknod bigint[],
    op_link bigint[],
    op_unlink bigint[],
    op_mkdir bigint[],
    op_rmdir bigint[],
    op_rename bigint[],
    op_getattr bigint[],
    op_setattr bigint[],
    op_getxattr bigint[],
    op_setxattr bigint[],
    op_statfs bigint[],
    op_sync bigint[],
    op_samedir_rename bigint[],
    op_crossdir_rename bigint[],
    op_parallel_rename_file bigint[],
    op_parallel_rename_dir bigint[],
    op_rename_trylocks bigint[],
    op_punch bigint[],
    op_migrate bigint[],
    op_fallocate bigint[],
    op_read bigint[],
    op_write bigint[],
    op_destroy bigint[],
    op_create bigint[],
    op_get_info bigint[],
    op_set_info bigint[],
    op_quotactl bigint[],
    op_prealloc bigint[],
    extra jsonb[]
) PARTITION BY RANGE (hour);

-- The arrays are compressed with lz4 (as small as pglz here, faster to read back), and kept in
-- the row (STORAGE MAIN: compressed in place, moved out of line only past a page): partitions
-- are created with toast_tuple_target = 128 (tiers_pack.py) so that every row of more than a
-- few deltas is compressed. Measured (bench/bench_pack.py, 50 nodes, 6 h): out-of-line
-- (EXTENDED) values cost 52 bytes per delta, 18-byte TOAST pointers and a TOAST row and index
-- entry per column; in place 42.
DO $$
DECLARE
    c text;
BEGIN
    FOR c IN SELECT attname FROM pg_attribute WHERE attrelid = 'jobstats_packed'::regclass
             AND attnum > 0 AND NOT attisdropped AND atttypid IN (SELECT oid FROM pg_type
             WHERE typcategory = 'A') LOOP
        EXECUTE format('ALTER TABLE jobstats_packed ALTER COLUMN %I SET COMPRESSION lz4, '
                       'ALTER COLUMN %I SET STORAGE MAIN', c, c);
    END LOOP;
END
$$;

-- The same reads as jobstats_delta's indexes: per job (the distribution key first), the
-- recovery of `:uid:host` entries by (host, time, uid), and time ranges (few rows a day).
CREATE INDEX jobstats_packed_job ON jobstats_packed (job, hour) WHERE job IS NOT NULL;
CREATE INDEX jobstats_packed_host ON jobstats_packed (host_id, hour, uid) WHERE id_class = 5;
CREATE INDEX jobstats_packed_hour ON jobstats_packed (hour);

-- The same privacy as jobstats_delta (sql/0004, sql/0020): a user reads the packed deltas of
-- their uid or of their jobs, admins everything; collectors read (attribution as the report
-- daemon); only the owner packs (`jobio db pack` deletes from jobstats_delta).
REVOKE ALL ON jobstats_packed FROM PUBLIC;
ALTER TABLE jobstats_packed ENABLE ROW LEVEL SECURITY;  -- no FORCE, as jobstats_delta
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'jobio_user') THEN
        GRANT SELECT ON jobstats_packed TO jobio_user, jobio_admin, jobio_collector;
        CREATE POLICY jobio_user_own ON jobstats_packed FOR SELECT TO jobio_user
            USING (uid = (SELECT jobio_current_uid())
                   OR job IN (SELECT j.job_raw FROM job j
                              WHERE j.uid = (SELECT jobio_current_uid())));
        CREATE POLICY jobio_admin_all ON jobstats_packed FOR SELECT TO jobio_admin
            USING (true);
        CREATE POLICY jobio_collector_all ON jobstats_packed FOR SELECT TO jobio_collector
            USING (true);
    END IF;
END
$$;
