-- Privacy like sacct's PrivateData, enforced by the database (see docs/privacy.md):
-- a user sees only their own jobs, admins see everything, collectors write.
--
--   jobio_user       read-only, row-level security: rows of the user's own uid (and the
--                    deltas / attributed I/O of their own jobs). Login roles of OS users are
--                    its members, made by `jobio db users` (slurm_io/store/accounts.py).
--   jobio_admin      reads everything (members of the `privacy.admin_group` Unix group).
--   jobio_collector  collectors, `jobs sync` and the job-end hook: INSERT/SELECT, and UPDATE/
--                    DELETE of the job tables (upserts). No DDL: see jobio_ensure_partitions.
--                    A collector's login role also needs BYPASSRLS (a role attribute, set by
--                    a superuser: it is not inherited): the writer loads jobstats_delta with
--                    COPY, which PostgreSQL refuses on a table with RLS for roles subject to
--                    it. That bypass shows collectors nothing their policy here does not.
--
-- Roles are global to the PostgreSQL cluster while this file runs once per database, so they
-- are created only when missing. Runs as the schema owner (a superuser, or a role with
-- CREATEROLE that owns the database).

DO $$
DECLARE
    r text;
    bad text;
BEGIN
    FOREACH r IN ARRAY ARRAY['jobio_admin', 'jobio_collector', 'jobio_user'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', r);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;  -- created meanwhile by the migration of another database
            END;
        END IF;
    END LOOP;
    -- A group role made beforehand by someone else must not be a login or a superuser.
    SELECT string_agg(rolname, ', ') INTO bad FROM pg_roles
    WHERE rolname IN ('jobio_admin', 'jobio_collector', 'jobio_user')
      AND (rolcanlogin OR rolsuper OR rolbypassrls);
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'role(s) % exist with LOGIN, SUPERUSER or BYPASSRLS', bad
            USING HINT = 'slurm-io uses them as group roles; rename or alter them first';
    END IF;
END
$$;

-- Database role -> Unix uid, written by `jobio db users` (the owner/superuser only).
CREATE TABLE jobio_account (
    rolname     name PRIMARY KEY,
    uid         integer NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON jobio_account FROM PUBLIC;

-- The uid of the current role (NULL when it has none: such a role sees no private rows).
-- SECURITY DEFINER so that users need no access to jobio_account; current_user is the
-- default argument because it is evaluated in the caller's context (inside the function it
-- would be the owner). STABLE, and the policies call it as `(SELECT jobio_current_uid())` so
-- that it runs once per query (an InitPlan), not once per row. search_path is pinned to the
-- schema the tables are in.
DO $$
BEGIN
    EXECUTE format($f$
        CREATE FUNCTION jobio_current_uid(role_name name DEFAULT current_user)
        RETURNS integer
        LANGUAGE sql STABLE SECURITY DEFINER PARALLEL SAFE
        SET search_path = %I, pg_temp
        AS 'SELECT uid FROM jobio_account WHERE rolname = role_name'
    $f$, current_schema());
END
$$;
REVOKE ALL ON FUNCTION jobio_current_uid(name) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION jobio_current_uid(name) TO jobio_user, jobio_admin, jobio_collector;

-- Daily partitions of jobstats_delta for collectors that do not own the table (ATTACH needs
-- ownership of the parent, and giving collectors CREATE on the schema would let them plant
-- functions in it). Same names, bounds and advisory lock as slurm_io/store/partitions.py,
-- so the writer finds these partitions and does no DDL itself. Run it ahead as the owner
-- (daily: `SELECT jobio_ensure_partitions(current_date, current_date + 7)`), or call it as
-- a collector. At most 62 days per call. Returns the number of partitions created.
DO $$
BEGIN
    EXECUTE format($f$
        CREATE FUNCTION jobio_ensure_partitions(first_day date, last_day date)
        RETURNS integer
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER
        SET search_path = %1$I, pg_temp
        AS $body$
        DECLARE
            d date;
            part text;
            n integer := 0;
        BEGIN
            IF first_day IS NULL OR last_day IS NULL OR last_day < first_day
               OR last_day - first_day > 62 THEN
                RAISE EXCEPTION 'jobio_ensure_partitions: want 1 to 63 days, got %% .. %%',
                    first_day, last_day;
            END IF;
            PERFORM pg_advisory_xact_lock(1544552450);  -- 0x5C10_0002, partitions.py
            FOR d IN SELECT generate_series(first_day, last_day, interval '1 day')::date LOOP
                part := 'jobstats_delta_p' || to_char(d, 'YYYYMMDD');
                CONTINUE WHEN EXISTS (
                    SELECT FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                    WHERE i.inhparent = 'jobstats_delta'::regclass AND c.relname = part);
                EXECUTE format('CREATE TABLE %%I.%%I (LIKE %%I.jobstats_delta INCLUDING '
                               'DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING '
                               'COMPRESSION)', %1$L, part, %1$L);
                EXECUTE format('ALTER TABLE %%I.jobstats_delta ATTACH PARTITION %%I.%%I '
                               'FOR VALUES FROM (%%L) TO (%%L)', %1$L, %1$L, part,
                               d::timestamp AT TIME ZONE 'UTC',
                               (d + 1)::timestamp AT TIME ZONE 'UTC');
                n := n + 1;
            END LOOP;
            RETURN n;
        END
        $body$
    $f$, current_schema());
END
$$;
REVOKE ALL ON FUNCTION jobio_ensure_partitions(date, date) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION jobio_ensure_partitions(date, date) TO jobio_collector;

-- Table privileges. Partitions get none: they are reached through jobstats_delta, whose
-- privileges and policies apply to every row read or written through it (the partitions'
-- own are not consulted then), and reading a partition directly is refused.
REVOKE ALL ON job, job_node, job_io, jobstats_delta, ingest_batch, host, fs_target FROM PUBLIC;
GRANT SELECT ON job, job_node, job_io, jobstats_delta, host, fs_target, schema_migrations
    TO jobio_user;
GRANT SELECT ON job, job_node, job_io, jobstats_delta, ingest_batch, host, fs_target,
    jobio_account, schema_migrations TO jobio_admin;
GRANT SELECT, INSERT ON jobstats_delta, ingest_batch, host, fs_target TO jobio_collector;
GRANT SELECT, INSERT, UPDATE, DELETE ON job, job_node, job_io TO jobio_collector;
GRANT SELECT ON schema_migrations TO jobio_collector;

-- Row-level security. Policies are permissive (OR-ed) and bound to roles, so an admin's or
-- collector's queries carry no filter at all (their policy is `true`), and a user's filter is
-- one InitPlan (the uid) plus, where rows may lack a uid, one hashed subplan (the user's job
-- ids, from the job_uid_start index). Both leave jobstats_delta's (job, ts_end) index usable:
-- a user's `job = X` is leakproof, so it stays an index condition under the policy.
-- FORCE: the owner gets no silent bypass either (a superuser owner, the embedded `slurmio`,
-- bypasses RLS anyway; a non-superuser owner is made a jobio_collector below) -- except on
-- jobstats_delta, which the writer fills with COPY: under FORCE a non-superuser owner could no
-- longer run a collector.
ALTER TABLE job ENABLE ROW LEVEL SECURITY;
ALTER TABLE job FORCE ROW LEVEL SECURITY;
CREATE POLICY jobio_user_own ON job FOR SELECT TO jobio_user
    USING (uid = (SELECT jobio_current_uid()));

ALTER TABLE job_node ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_node FORCE ROW LEVEL SECURITY;
CREATE POLICY jobio_user_own ON job_node FOR SELECT TO jobio_user
    USING (uid = (SELECT jobio_current_uid())
           OR job IN (SELECT j.job FROM job j WHERE j.uid = (SELECT jobio_current_uid())));

ALTER TABLE job_io ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_io FORCE ROW LEVEL SECURITY;
CREATE POLICY jobio_user_own ON job_io FOR SELECT TO jobio_user
    USING (uid = (SELECT jobio_current_uid())
           OR job IN (SELECT j.job FROM job j WHERE j.uid = (SELECT jobio_current_uid())));

-- A delta is the user's when its id names their uid, or names one of their jobs (ids such as
-- `%j` carry no uid).
ALTER TABLE jobstats_delta ENABLE ROW LEVEL SECURITY;  -- no FORCE: see above
CREATE POLICY jobio_user_own ON jobstats_delta FOR SELECT TO jobio_user
    USING (uid = (SELECT jobio_current_uid())
           OR job IN (SELECT j.job FROM job j WHERE j.uid = (SELECT jobio_current_uid())));

-- Collector bookkeeping: no user rows at all (users are not granted SELECT either).
ALTER TABLE ingest_batch ENABLE ROW LEVEL SECURITY;
ALTER TABLE ingest_batch FORCE ROW LEVEL SECURITY;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['job', 'job_node', 'job_io', 'jobstats_delta', 'ingest_batch'] LOOP
        EXECUTE format('CREATE POLICY jobio_admin_all ON %I FOR SELECT TO jobio_admin '
                       'USING (true)', t);
        EXECUTE format('CREATE POLICY jobio_collector_all ON %I FOR ALL TO jobio_collector '
                       'USING (true) WITH CHECK (true)', t);
    END LOOP;
    -- A non-superuser owner is subject to FORCE ROW LEVEL SECURITY: let it keep reading and
    -- writing every row (migrations, prune, sync run as the owner) as a collector.
    IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
       AND NOT pg_has_role(current_user, 'jobio_collector', 'USAGE') THEN
        EXECUTE format('GRANT jobio_collector TO %I', current_user);
    END IF;
END
$$;
