"""The job fields slurm-io asks sacct for, per release.

Here, in the Slurm seam, because the seam builds the command line (`Slurm.sacct_fields`,
SLUID from 24.11) and jobs.sacct parses what comes back: jobs imports slurm, never the
reverse (docs/architecture.md).
"""

from __future__ import annotations

# What slurm-io asks sacct for (SacctSource, docs). SubmitLine last: it is the column most
# likely to contain `|` or a newline, and trailing text is the easiest to put back.
SACCT_FIELDS: tuple[str, ...] = (
    "JobID", "JobIDRaw", "JobName", "User", "UID", "Account", "Partition", "State",
    "ExitCode", "Submit", "Start", "End", "NNodes", "NodeList", "WorkDir", "Cluster", "SubmitLine",
)
# The same for a sacct that knows SLUID (24.11+; 22.05 refuses an unknown field): before the
# free text, so that SubmitLine stays last.
SACCT_FIELDS_SLUID: tuple[str, ...] = (*SACCT_FIELDS[:-1], "SLUID", SACCT_FIELDS[-1])
