-- The packed tier per UTC day, in the `derived` layout (docs/storage.md, "Two tiers of raw
-- deltas"; issue 26 item 2: <= 24 bytes per delta). sql/0021's rows (one per entry and hour,
-- the deltas' columns as plain arrays) measured 41 B per delta at site density; the same
-- deltas laid out per (entry, UTC day) with offsets and residuals measured 21 B
-- (bench/bench_pack_layouts.py, which checks the layout decodes back exactly):
-- - one row per entry and UTC day of ts_end: an entry's arrays are long enough for lz4 to
--   find the repeats (at hour rows, array headers and NULL bitmaps are a large share);
-- - `hour` is the row's day (midnight UTC; the name of 0021's column is kept so that every
--   query naming the packed rows by (hour, entry) keeps its meaning: one row per entry);
-- - ts_end as int8 microseconds from `hour`, ts_start, last_update and entry_start as int8
--   microseconds before ts_end: small numbers instead of 8 random-looking bytes;
-- - of each byte counter, max, bytes and sumsq as residuals of what one request size
--   predicts (max - min, bytes - samples x min, sumsq - bytes x min), all 0 when a delta's
--   requests have one size; a residual array is NULL when every residual is 0 and its NULLs
--   are exactly where min is NULL (decoded back: the prediction, NULL where min is NULL);
-- - `<b>_sumsq_raw`: the sumsq values that are not integers below 2^63, or whose residual
--   would not fit int8, kept as they are (their residual is NULL); NULL when there is none.
-- The decoding is store/tiers.py's, the encoding store/tiers_pack.py's.
--
-- Online: 0021's table is renamed (with its partitions and indexes: catalog changes, no
-- scan) to jobstats_packed_0021 and read as a third half of store.tiers until `jobio db pack`
-- has re-packed its days into the new layout (it drops each emptied day); `db prune` drops
-- its days with the others. Nothing here touches jobstats_delta: the collectors' COPY never
-- waits for this migration. The renames take ACCESS EXCLUSIVE on the packed tables only
-- (readers wait a moment, until commit).
--
-- Collectors write only the hot tier, so they go on. An older release's readers and packer
-- fail on the new layout's column types (an error, never a figure computed without the
-- packed deltas), until upgraded:
-- writers-from: 21

ALTER TABLE jobstats_packed RENAME TO jobstats_packed_0021;
ALTER INDEX jobstats_packed_job RENAME TO jobstats_packed_0021_job;
ALTER INDEX jobstats_packed_host RENAME TO jobstats_packed_0021_host;
ALTER INDEX jobstats_packed_hour RENAME TO jobstats_packed_0021_hour;
DO $$
DECLARE
    c text;
BEGIN
    FOR c IN SELECT k.relname FROM pg_inherits i JOIN pg_class k ON k.oid = i.inhrelid
             WHERE i.inhparent = 'jobstats_packed_0021'::regclass LOOP
        IF c LIKE 'jobstats\_packed\_p%' THEN
            EXECUTE format('ALTER TABLE %I RENAME TO %I', c,
                           'jobstats_packed_0021_p' || substr(c, length('jobstats_packed_p') + 1));
        END IF;
    END LOOP;
END
$$;

CREATE TABLE jobstats_packed (
    hour        timestamptz NOT NULL,   -- the UTC day (its midnight) of every element's ts_end
    job         bigint,                 -- the classification of the entry (jobstats_delta's)
    id_class    smallint NOT NULL,
    uid         integer,
    host_id     integer,
    raw_id      text NOT NULL,
    n           integer NOT NULL,       -- elements (deltas) in each array
    target_id   integer[] NOT NULL,
    ts_end      bigint[] NOT NULL,      -- microseconds from `hour`
    ts_start    bigint[] NOT NULL,      -- microseconds before ts_end (likewise the next two)
    last_update bigint[],               -- NULL: no element has one (likewise below)
    flags       smallint[],             -- NULL: all 0
    entry_start bigint[],
    read_bytes bigint[],                -- residual: bytes - samples x min (NULL: see above)
    read_bytes_samples bigint[],
    read_bytes_sumsq bigint[],          -- residual: sumsq - bytes x min
    read_bytes_sumsq_raw double precision[],  -- sumsq kept as it is where it has no residual
    read_bytes_min bigint[],
    read_bytes_max bigint[],            -- residual: max - min
    read_bytes_hist jsonb[],
    write_bytes bigint[],
    write_bytes_samples bigint[],
    write_bytes_sumsq bigint[],
    write_bytes_sumsq_raw double precision[],
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

-- As 0021: lz4, in the row (STORAGE MAIN), partitions with toast_tuple_target = 128.
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

-- As 0021's: per job, the recovery of `:uid:host` entries by (host, day, uid), and days.
CREATE INDEX jobstats_packed_job ON jobstats_packed (job, hour) WHERE job IS NOT NULL;
CREATE INDEX jobstats_packed_host ON jobstats_packed (host_id, hour, uid) WHERE id_class = 5;
CREATE INDEX jobstats_packed_hour ON jobstats_packed (hour);
-- and the entries a pack chunk merges (`raw_id IN (its hot entries)`): without it each chunk
-- of a run that finds day rows packed already (late data, hours closed later that day) would
-- read the whole day partition, compressed arrays and all (~0.2 B a delta at site rows).
CREATE INDEX jobstats_packed_raw ON jobstats_packed (raw_id, hour);

-- The same privacy as jobstats_delta and 0021 (the renamed table keeps its policies).
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
