"""What the reporter tests share: a Config and a Reporter on the test's SMTP sink and
database, the reporter run until a condition holds, `jobio` in-process."""

from __future__ import annotations

import time
from pathlib import Path

import psycopg
from click.testing import CliRunner

from slurm_io.cli import main
from slurm_io.config import Config
from slurm_io.notify.interfaces import MailBuilder
from slurm_io.notify.plain import PlainMailBuilder
from slurm_io.notify.reporter import Reporter, ReporterSettings, smtp_settings
from tests.notify.conftest import DOMAIN, SENDER


def make_config(dsn: str, port: int, tmp: Path, **kw) -> Config:
    base = dict(dsn=dsn, hook_spool_dir=tmp / "spool", mail_host="127.0.0.1", mail_port=port,
                mail_domain=DOMAIN, mail_from=SENDER, mail_timeout=10.0, report_interval=0.2,
                report_sweep_every=0.0, report_retry_base=0.2, report_max_attempts=3,
                state_dir=tmp / "state")
    base.update(kw)
    return Config(**base)


def make_reporter(cfg: Config, *, builder: MailBuilder | None = None,
                  sacct: Path | None = None) -> Reporter:
    settings = ReporterSettings.from_config(cfg, sacct=str(sacct or "/nonexistent/sacct"))
    return Reporter(lambda: psycopg.connect(cfg.dsn or ""), builder or PlainMailBuilder(cfg),
                    smtp_settings(cfg), settings)


def submit_of(dsn: str, job: int) -> float:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT extract(epoch FROM submit)::float8 FROM job WHERE job_raw = %s",
                           (job,)).fetchone()
    assert row is not None
    return float(row[0])


def run_until(reporter: Reporter, done, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "reporter did not get there"
        reporter.run_once()
        time.sleep(0.05)


def jobio(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output
