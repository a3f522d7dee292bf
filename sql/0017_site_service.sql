-- A site: unprivileged users and the read service (`jobio serve`, docs/deploy.md).
--
-- 1. jobio_data_complete_until(): the time up to which every collector has read (the oldest
--    of their newest reads). `jobio show` and the mails need it to say whether a finished
--    job's figures are final, but ingest_batch is collector bookkeeping that users may not
--    read (sql/0004_privacy.sql). This SECURITY DEFINER function gives them that one
--    timestamp and nothing else.
-- 2. jobio_service: a group role (NOLOGIN, NOINHERIT) that every user's login role is granted
--    to (`jobio db users` does it, and this migration for the roles that exist). The
--    service's own login role is a member of it, so the service may `SET ROLE alice` for a
--    request from uid alice (MUNGE-authenticated) and read exactly what alice may read: the
--    same row-level security. NOINHERIT: the service itself inherits no user's rights; it
--    holds none of its own either, only the right to become a user, one transaction at a time.

DO $$
BEGIN
    EXECUTE format($f$
        CREATE FUNCTION jobio_data_complete_until()
        RETURNS timestamptz
        LANGUAGE sql STABLE SECURITY DEFINER PARALLEL SAFE
        SET search_path = %I, pg_temp
        AS 'SELECT min(last) FROM (SELECT max(read_time) AS last FROM ingest_batch
                                   GROUP BY collector) c'
    $f$, current_schema());
END
$$;
REVOKE ALL ON FUNCTION jobio_data_complete_until() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION jobio_data_complete_until()
    TO jobio_user, jobio_admin, jobio_collector;

DO $$
DECLARE
    r record;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'jobio_service') THEN
        BEGIN
            CREATE ROLE jobio_service NOLOGIN NOINHERIT;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;  -- created meanwhile by the migration of another database
        END;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'jobio_service'
               AND (rolcanlogin OR rolsuper OR rolbypassrls OR rolinherit)) THEN
        RAISE EXCEPTION 'role jobio_service exists with LOGIN, SUPERUSER, BYPASSRLS or INHERIT'
            USING HINT = 'slurm-io uses it as a NOINHERIT group role; rename or alter it first';
    END IF;
    -- users' roles made before this migration (jobio db users grants the new ones)
    FOR r IN SELECT a.rolname FROM jobio_account a JOIN pg_roles p ON p.rolname = a.rolname
             WHERE NOT p.rolsuper AND NOT p.rolbypassrls
               AND NOT pg_has_role('jobio_service', p.oid, 'MEMBER') LOOP
        EXECUTE format('GRANT %I TO jobio_service', r.rolname);
    END LOOP;
END
$$;
