-- Het job components (`1853+1`) are found by their display id: `jobio show 1853` lists every
-- component, like `sacct -j 1853`, with `jobid LIKE '1853+%'`. A prefix LIKE can use a
-- btree index only with text_pattern_ops (or the C collation), whatever the database's
-- collation is; the plain job_jobid index stays for equality (`5_1`, `1853+1`).
CREATE INDEX job_jobid_prefix ON job (jobid text_pattern_ops);
