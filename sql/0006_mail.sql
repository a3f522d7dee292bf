-- Users' choice about the per-job I/O mail (`jobio mail off|on`, see docs/mail.md).
--
-- One row per uid that ever said something; no row means "as the site policy says". A user
-- writes only their own row, like everything private in sql/0004_privacy.sql: the policies
-- compare with jobio_current_uid(), the uid `jobio db users` mapped to the login role.
-- Admins read every row; collectors (the mail reporter runs as one) read and write them all.

CREATE TABLE mail_preference (
    uid         integer PRIMARY KEY,
    enabled     boolean NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now()
);

-- changed_at is the server's clock, whoever writes the row.
DO $$
BEGIN
    EXECUTE format($f$
        CREATE FUNCTION jobio_mail_preference_stamp() RETURNS trigger
        LANGUAGE plpgsql SET search_path = %I, pg_temp
        AS 'BEGIN NEW.changed_at := now(); RETURN NEW; END'
    $f$, current_schema());
END
$$;
REVOKE ALL ON FUNCTION jobio_mail_preference_stamp() FROM PUBLIC;
CREATE TRIGGER mail_preference_stamp BEFORE INSERT OR UPDATE ON mail_preference
    FOR EACH ROW EXECUTE FUNCTION jobio_mail_preference_stamp();

REVOKE ALL ON mail_preference FROM PUBLIC;
-- Users: read, create and flip their own row (an upsert needs SELECT, INSERT and UPDATE);
-- no DELETE, and the uid of a row cannot be changed.
GRANT SELECT, INSERT ON mail_preference TO jobio_user;
GRANT UPDATE (enabled, changed_at) ON mail_preference TO jobio_user;
GRANT SELECT ON mail_preference TO jobio_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON mail_preference TO jobio_collector;

ALTER TABLE mail_preference ENABLE ROW LEVEL SECURITY;
ALTER TABLE mail_preference FORCE ROW LEVEL SECURITY;
CREATE POLICY jobio_user_own ON mail_preference FOR ALL TO jobio_user
    USING (uid = (SELECT jobio_current_uid()))
    WITH CHECK (uid = (SELECT jobio_current_uid()));
CREATE POLICY jobio_admin_all ON mail_preference FOR SELECT TO jobio_admin USING (true);
CREATE POLICY jobio_collector_all ON mail_preference FOR ALL TO jobio_collector
    USING (true) WITH CHECK (true);
