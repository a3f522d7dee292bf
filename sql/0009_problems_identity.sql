-- Hardening (see docs/problems.md): a quarantine for records that could not be taken, and an
-- identity for each database.
--
-- `problem` keeps every record from outside that was refused (a sacct line, a hook spool
-- file, a job_stats entry, a spooled batch, a damaged collector state) with what was wrong and
-- the record itself as bytes, so that an admin can see it (`jobio problems`) and nothing is
-- lost silently. One bad record is one row; the ones after it are processed as usual.
-- Writers are the collectors, `jobs import|sync`, the hook and the reporter (jobio_collector);
-- readers are admins. Users see nothing (no privilege): a refused record may be another
-- user's job.
CREATE TABLE problem (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seen_at     timestamptz NOT NULL DEFAULT now(),
    source      text NOT NULL,          -- 'sacct', 'hook-spool', 'jobstats', 'batch', 'state', ...
    origin      text,                   -- collector name, file name, line number ...
    reason      text NOT NULL,          -- one line: what was wrong
    lost        text,                   -- what could not be stored because of it, if anything
    record      bytea                   -- the record as received (at most 64 KiB kept)
);
CREATE INDEX problem_seen ON problem (seen_at);
CREATE INDEX problem_source_seen ON problem (source, seen_at);

REVOKE ALL ON problem FROM PUBLIC;
GRANT SELECT ON problem TO jobio_admin;
GRANT SELECT, INSERT ON problem TO jobio_collector;

-- Which database this is. Created once by `jobio db upgrade` (this migration); a collector's
-- state records it, and a state made for another database is set aside instead of being
-- taken as "already stored here" (a replay into a fresh database must store everything).
-- A database cloned with CREATE DATABASE ... TEMPLATE shares its template's identity until
-- `jobio_new_identity()` is called (the tests do); a restored backup keeps it, rightly: it
-- holds the same rows.
CREATE TABLE db_identity (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    id          uuid NOT NULL DEFAULT gen_random_uuid(),
    created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO db_identity DEFAULT VALUES;
REVOKE ALL ON db_identity FROM PUBLIC;
GRANT SELECT ON db_identity TO jobio_user, jobio_admin, jobio_collector;

CREATE FUNCTION jobio_new_identity() RETURNS uuid LANGUAGE sql AS
$$ UPDATE db_identity SET id = gen_random_uuid(), created_at = now() RETURNING id $$;
REVOKE ALL ON FUNCTION jobio_new_identity() FROM PUBLIC;
