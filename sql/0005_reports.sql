-- Per-job report mails: one queue row per job, written by the job-end hook (EpilogSlurmctld,
-- epilog/jobio-epilog), by the reporter when it ingests the hook's spool files, and by the
-- reporter's sweep for finished jobs that never got a hook. `jobio report-daemon` sends
-- them. See docs/hook.md for the states and the exactly-once protocol.
--
--   queued   waiting: for sacct's final record, for every collector to read past the job's
--            end, or for the next SMTP attempt (next_attempt, exponential back-off)
--   sending  the reporter holds the message in an open SMTP transaction (everything sent but
--            the final "."); a row left here by a dead reporter is resolved as sent, never
--            sent again (note says "unconfirmed")
--   sent     the SMTP server accepted the message (message_id, sent_at)
--   skipped  no mail: the job never ran (cancelled while pending), or the mail builder said
--            no mail for it (the user turned mails off)
--   failed   given up after `report.max_attempts` attempts (last_error); `jobio reports
--            --retry JOB` queues it again
--
-- The primary key is the whole exactly-once rule on the database side: a job gets one row,
-- whoever queues it first (hook, spool ingest or sweep), and the row only moves forward.

CREATE TABLE report_queue (
    job          bigint PRIMARY KEY,          -- JobIDRaw, as in `job`
    queued_at    timestamptz NOT NULL DEFAULT now(),  -- the hook's time (about the job's end)
    source       text NOT NULL,               -- hook, spool, sweep
    state        text NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'sending', 'sent', 'skipped', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,  -- SMTP attempts (and mail builds that failed)
    next_attempt timestamptz NOT NULL DEFAULT now(),
    last_error   text,                        -- last SMTP / build error
    note         text,                        -- what the row waits for, why it was skipped
    claimed_by   text,                        -- host:pid of the reporter in `sending`
    claimed_at   timestamptz,
    recipients   text[],
    message_id   text,                        -- deterministic: <jobio-JOB.SUBMIT@domain>
    incomplete   boolean,                     -- sent before all data was in (max wait)
    sent_at      timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
-- What the reporter scans every pass: the rows still to do, oldest due first.
CREATE INDEX report_queue_due ON report_queue (next_attempt, job)
    WHERE state IN ('queued', 'sending');
CREATE INDEX report_queue_failed ON report_queue (updated_at) WHERE state = 'failed';

-- Bookkeeping of the hook and the reporter (collector-like roles, see 0004): no user rows.
-- Users learn about their reports from the mails; admins read the queue.
REVOKE ALL ON report_queue FROM PUBLIC;
GRANT SELECT ON report_queue TO jobio_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON report_queue TO jobio_collector;
