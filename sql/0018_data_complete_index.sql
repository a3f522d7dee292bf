-- jobio_data_complete_until() (sql/0017) without reading all of ingest_batch.
--
-- Every `jobio show`, service request and mail asks it, and ingest_batch grows by one row per
-- collector per cycle and is never pruned (20 servers at the default 120 s: 2 M rows in 140
-- days, where the aggregate took ~0.8 s a call). The same value -- the oldest of the
-- collectors' newest read times -- from an index: the collectors are found by skipping
-- through the primary key (collector, seq), each one's newest read is the last entry of
-- ingest_batch_collector_read_time. Cost: one index probe per collector.

CREATE INDEX ingest_batch_collector_read_time ON ingest_batch (collector, read_time);

DO $$
BEGIN
    EXECUTE format($f$
        CREATE OR REPLACE FUNCTION jobio_data_complete_until()
        RETURNS timestamptz
        LANGUAGE sql STABLE SECURITY DEFINER PARALLEL SAFE
        SET search_path = %I, pg_temp
        AS 'WITH RECURSIVE c(collector) AS (
                (SELECT collector FROM ingest_batch ORDER BY collector LIMIT 1)
                UNION ALL
                SELECT (SELECT b.collector FROM ingest_batch b
                        WHERE b.collector > c.collector ORDER BY b.collector LIMIT 1)
                FROM c WHERE c.collector IS NOT NULL)
            SELECT min((SELECT b.read_time FROM ingest_batch b
                        WHERE b.collector = c.collector
                        ORDER BY b.read_time DESC LIMIT 1))
            FROM c WHERE c.collector IS NOT NULL'
    $f$, current_schema());
END
$$;
