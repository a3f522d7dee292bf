-- I/O alerts on running jobs (`jobio alerts`, docs/alerts.md): what was sent to whom, so that
-- a job is warned once per kind of harm and a user at most `alerts.daily_cap` times a day.
--
--   sending      the SMTP transaction is prepared (all but the final "."); a row left here
--                by a crash is never sent again (like report_queue's `sending`)
--   sent         the server accepted the mail (sent_at)
--   capped       not sent: the user had reached the daily cap (recorded once, not retried)
--   failed       the server refused or could not be reached; the next run tries again
--
-- One row per (job, kind) that is not `failed`: the unique index is the "once per job and
-- kind" rule on the database side, whoever runs the check.
CREATE TABLE alert_log (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job          bigint NOT NULL,              -- JobIDRaw, as in `job`
    jobid        text NOT NULL,                -- display id
    uid          integer,
    user_name    text,
    kind         text NOT NULL,                -- risk, metadata, small_writes
    state        text NOT NULL CHECK (state IN ('sending', 'sent', 'capped', 'failed')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    sent_at      timestamptz,
    data_until   timestamptz,                  -- newest collector read the finding used
    recipients   text[],
    message_id   text,
    figures      jsonb NOT NULL DEFAULT '{}',  -- what was found (rates, risks, sizes)
    error        text
);
CREATE UNIQUE INDEX alert_log_once ON alert_log (job, kind) WHERE state <> 'failed';
CREATE INDEX alert_log_user_day ON alert_log (user_name, created_at);
CREATE INDEX alert_log_created ON alert_log (created_at);

REVOKE ALL ON alert_log FROM PUBLIC;
GRANT SELECT ON alert_log TO jobio_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON alert_log TO jobio_collector;
