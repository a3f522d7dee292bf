"""The reporter's settings (from the configuration) and its sacct source.

Apart from slurm_io.notify.reporter so that the daemon module holds the pass and its
decisions; reporter re-exports these names.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from dataclasses import dataclass, replace
from email.utils import parseaddr
from pathlib import Path
from typing import Any

from slurm_io.config import Config
from slurm_io.jobs.source import DEFAULT_SACCT, SacctSource
from slurm_io.notify.smtp import SmtpSettings


class SacctJobsSource(SacctSource):
    """`sacct ... -j IDS`: the records of given jobs, whenever they ran."""

    def __init__(self, jobs: Iterable[int], sacct: str = DEFAULT_SACCT, **kw: Any) -> None:
        super().__init__(sacct, **kw)
        self.job_ids = list(jobs)

    def command(self, since: float | None, until: float | None) -> list[str]:
        return [*super().command(since, until), "-j", ",".join(map(str, self.job_ids))]

    def text(self, since: float | None, until: float | None) -> str:
        return self.slurm.sacct_jobs(self.window(since, until), self.job_ids,
                                     timeout=self.timeout)


@dataclass(frozen=True)
class ReporterSettings:
    spool_dir: Path = Path("/var/spool/slurm-io/hook")
    interval: float = 30.0
    max_wait: float = 1800.0
    sweep_every: float = 900.0
    sweep_hours: float = 6.0
    max_attempts: int = 8
    retry_base: float = 60.0
    resolution: float = 120.0  # the collectors' interval (attribution)
    sender: str = "slurm-io@localhost"
    message_id_domain: str = "localhost"
    sacct: str = DEFAULT_SACCT
    batch: int = 500  # due rows looked at per pass
    lease: float = 180.0  # a `sending` row older than this, of a reporter elsewhere, is orphaned
    # kept hook records and the ledger of mailed jobs, for a restored database (0: neither)
    replay_window: float = 3 * 86400.0

    @classmethod
    def from_config(cls, cfg: Config, **overrides: Any) -> ReporterSettings:
        sender = cfg.mail_from or f"slurm-io@{socket.getfqdn()}"
        domain = parseaddr(sender)[1].rpartition("@")[2] or socket.getfqdn()
        s = cls(spool_dir=cfg.hook_spool_dir, interval=cfg.report_interval,
                max_wait=cfg.report_max_wait, sweep_every=cfg.report_sweep_every,
                sweep_hours=cfg.report_sweep_hours, max_attempts=cfg.report_max_attempts,
                retry_base=cfg.report_retry_base, resolution=cfg.interval, sender=sender,
                message_id_domain=domain, lease=2 * cfg.mail_timeout + 120,
                sacct=cfg.sacct or DEFAULT_SACCT,
                replay_window=_window(cfg.report_replay_window))
        return replace(s, **{k: v for k, v in overrides.items() if v is not None})


def _window(text: str) -> float:
    from slurm_io.store.partitions import parse_duration

    try:
        return parse_duration(text)
    except ValueError as e:
        raise ValueError(f"[report] replay_window: {e}") from None


def smtp_settings(cfg: Config) -> SmtpSettings:
    password = None
    if cfg.mail_password_file is not None:
        password = cfg.mail_password_file.read_text().strip()
    return SmtpSettings(cfg.mail_host, cfg.mail_port, cfg.mail_starttls, cfg.mail_ssl,
                        cfg.mail_user, password, cfg.mail_timeout)
