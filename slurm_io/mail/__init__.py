"""The per-job I/O mail: its content (view model, templates, message) and who gets it.

`view` turns a job report (report.jobreport.JobReport; `advice` its rules) into what the
templates print (pure),
`recipients` decides who gets mail (pure, plus the `scontrol`/`sacct` look-up),
`preferences` stores users' opt-outs, `builder.MailBuilder` puts them together.
"""
