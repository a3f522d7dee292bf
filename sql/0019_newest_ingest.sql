-- jobio_newest_ingest(): when the newest batch was ingested. `jobio show` compares it with
-- the time a finished job's figures were stored (job_io.data_until) to tell whether they are
-- current or new data may have come (sql/0014); users run that query, but ingest_batch is
-- collector bookkeeping they may not read (sql/0004). Like jobio_data_complete_until()
-- (sql/0017), this SECURITY DEFINER function gives them that one timestamp and nothing else.
DO $$
BEGIN
    EXECUTE format($f$
        CREATE FUNCTION jobio_newest_ingest()
        RETURNS timestamptz
        LANGUAGE sql STABLE SECURITY DEFINER PARALLEL SAFE
        SET search_path = %I, pg_temp
        AS 'SELECT max(ingested_at) FROM ingest_batch'
    $f$, current_schema());
END
$$;
REVOKE ALL ON FUNCTION jobio_newest_ingest() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION jobio_newest_ingest() TO jobio_user, jobio_admin, jobio_collector;
