"""The one place that runs Slurm's commands (the seam between slurm-io and Slurm).

Everything that asks Slurm something -- `jobs sync` (jobs.source), the report daemon's
per-job sacct (notify.reporter), the mail's MailUser lookup (mail.recipients) and the job-end
hook's fallback for start/end times -- goes through `Slurm`: absolute command paths from the
config (`[slurm] sacct/scontrol`: hooks and timers run without PATH), one timeout, a fixed
time format, and the release it talks to (`sacct --version`), which decides what may be asked
for (SLUID exists from 24.11). Parsing stays pure, in jobs.sacct / mail.recipients /
slurm.scontrol; this module only runs commands and hands their text to those parsers.
"""

from slurm_io.slurm.commands import (
    DEFAULT_SACCT,
    DEFAULT_SCONTROL,
    Slurm,
    SlurmError,
    parse_version,
)

__all__ = ["DEFAULT_SACCT", "DEFAULT_SCONTROL", "Slurm", "SlurmError", "parse_version"]
