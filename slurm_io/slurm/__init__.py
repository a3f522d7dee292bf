"""The one place that runs Slurm's commands (the seam between slurm-io and Slurm).

Everything that asks Slurm something -- `jobs sync` (jobs.source), the report daemon's
per-job sacct (notify.reporter), the mail's MailUser lookup (mail.recipients) -- goes through
`Slurm`: absolute command paths from the config (`[slurm] sacct/scontrol`: hooks and timers
run without PATH), one timeout, a fixed time format, and the release it talks to
(`sacct --version`), which decides what may be asked for (SLUID exists from 24.11). The
job-end hook's fallback for start/end times goes through `jobend.scontrol_job_times`, the
same call with the standard library only. Every command runs through slurm_io.procs.

Parsing stays pure: jobs.sacct (sacct -P), slurm.scontrol, slurm.sacct_json, slurm.nodes
(node lists), mail.recipients; `fields` holds the sacct field lists. jobs imports slurm,
never the reverse.

The names below are loaded on first use (PEP 562), so that importing a pure submodule --
the hook's `slurm.jobend`, `slurm.nodes` -- does not load `commands` (dataclasses, inspect).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slurm_io.slurm.commands import (
        DEFAULT_SACCT,
        DEFAULT_SCONTROL,
        Slurm,
        SlurmError,
        parse_version,
    )

__all__ = ["DEFAULT_SACCT", "DEFAULT_SCONTROL", "Slurm", "SlurmError", "parse_version"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from slurm_io.slurm import commands

        return getattr(commands, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
