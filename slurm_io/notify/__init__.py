"""Job-end notification: the EpilogSlurmctld hook, its spool, the report queue and the
reporter that mails each finished job's I/O exactly once (docs/hook.md).

`hook` is the hook program (stdlib only until it forks), `hookspool` its spool files,
`queue` the report_queue table, `smtp` the SMTP transaction split at the final dot,
`reporter` the daemon, `interfaces` the MailBuilder protocol the mail content implements.
"""
