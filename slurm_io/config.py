"""Configuration: one TOML file, every key also settable by a command-line flag.

Lookup: `--config FILE`, else $SLURM_IO_CONFIG, else /etc/slurm-io/config.toml when it
exists, else built-in defaults. The database: `--dsn`, else $SLURM_IO_DSN, else the `dsn`
key, else the embedded private PostgreSQL. See docs/configuration.md for every key.
"""

from __future__ import annotations

import os
import socket
import tomllib
from pathlib import Path
from typing import Any

from slurm_io.paths import default_state_dir

SYSTEM_CONFIG = Path("/etc/slurm-io/config.toml")
DEFAULT_COMMAND = "lctl get_param mdt.*.job_stats obdfilter.*.job_stats"


class ConfigError(ValueError):
    """The configuration file is unreadable or has a wrong key or value."""


class Config:
    """Every setting, immutable: `Config(key=value, ...)`, `cfg.replace(key=value)`.

    Why a plain class and not a frozen dataclass: the dataclass compiled its generated
    `__init__`, `__eq__`, `__hash__` and `__repr__` over these 84 fields at every import,
    ~2-3 ms of each `jobio` start-up (issue 25; `python -X importtime`). Here the defaults
    are class attributes and an instance holds only what was given, so import costs the
    class body alone. Keys, defaults, equality, hashing and immutability are as before.
    """

    dsn: str | None = None
    # a streaming standby (or any read-only copy) for the readers: `jobio show`, `daily`,
    # `serve`, `exporter` (docs/deploy.md "Readers on a standby"); writes stay on `dsn`
    read_dsn: str | None = None
    # ClusterName given to job records that carry none (old sacct text, pyslurm); stored in
    # the database by `jobio db upgrade` (sql/0020). The hook and sacct name their cluster.
    cluster: str | None = None
    state_dir: Path  # default: default_state_dir(), when the instance is made
    # collector
    command: str = DEFAULT_COMMAND
    interval: float = 120.0
    # retention (docs/storage.md): raw deltas by whole daily partitions; the stored results
    # of attribution (job_io, job_io_hour) and the LASSi hours for years
    retention_raw: str = "90d"
    retention_results: str = "1825d"
    collector_name: str  # default: the short host name, when the instance is made
    spool_dir: Path | None = None
    command_timeout: float = 90.0
    # committed batches kept to be sent again to a database restored from a backup
    # (docs/collector.md "Restores"); a duration like "3d", "12h"
    replay_window: str = "3d"
    # job id grammar
    jobid_formats: tuple[str, ...] = ("%j:%u:%H", "%e.%u")
    system_uid_max: int = 999
    system_uids: tuple[int, ...] = (65534,)
    # privacy: members of this Unix group see every job (database role jobio_admin)
    admin_group: str = "slurmio-admin"
    # per-job I/O mail: who gets it and the advice thresholds (docs/mail.md)
    mail_policy: str = "above_size"  # all | mail_type_end | above_size | off
    mail_min_bytes: int = 1 << 30
    mail_domain: str | None = None
    mail_address: str | None = None  # e.g. "{user}@example.org"
    mail_from: str | None = None
    mail_template_dir: Path | None = None
    mail_slurm_lookup: bool = True
    mail_advice_kb_ops: float = 16.0
    mail_advice_small_share: float = 0.5
    mail_advice_min_requests: int = 10_000
    mail_advice_metadata_per_node_hour: float = 1e5
    mail_advice_min_metadata_ops: int = 10_000
    # job-end hook and report delivery (docs/hook.md)
    hook_spool_dir: Path = Path("/var/spool/slurm-io/hook")
    hook_db_timeout: float = 20.0  # the hook's background database attempt; 0: spool only
    mail_host: str = "localhost"
    mail_port: int = 25
    mail_starttls: bool = False
    mail_ssl: bool = False  # SMTPS (port 465)
    mail_user: str | None = None
    mail_password_file: Path | None = None
    mail_timeout: float = 30.0
    report_interval: float = 30.0
    report_max_wait: float = 1800.0  # then report anyway, saying data may be incomplete
    report_sweep_every: float = 900.0  # 0: no sweep
    report_sweep_hours: float = 6.0
    report_max_attempts: int = 8
    report_retry_base: float = 60.0
    # hook records and the ledger of mailed jobs kept for a restored database (docs/hook.md)
    report_replay_window: str = "3d"
    # Slurm's commands (docs/jobs.md): absolute paths, hooks and timers run without PATH.
    # sacct None: pyslurm when importable, else /usr/bin/sacct (jobs sync).
    sacct: str | None = None
    scontrol: str = "/usr/bin/scontrol"
    # LASSi metrics (docs/views.md): risk scaling factor a, baseline window in days
    lassi_a: float = 2.0
    lassi_baseline_days: int = 7
    # Prometheus exporter (docs/exporter.md)
    exporter_listen: str = "127.0.0.1:9817"
    exporter_top_jobs: int = 20
    exporter_top_users: int = 50
    exporter_top_accounts: int = 50
    exporter_targets: bool = True
    # I/O alerts on running jobs (docs/alerts.md)
    alerts_admin: str | None = None  # copy of every alert (Cc)
    alerts_window: float = 3600.0
    alerts_risk: float = 5.0  # LASSi risk_oss / risk_mds over the window
    alerts_metadata_ops: float = 1e6  # of one storm operation in the window
    alerts_small_writes: int = 200_000  # write requests in the window ...
    alerts_small_write_size: int = 16384  # ... of at most this mean size ...
    alerts_sustained: float = 0.75  # ... in this share of the window's intervals
    alerts_daily_cap: int = 3  # alert mails per user per UTC day
    alerts_link: str = "jobio show {jobid} --timeline"  # or a URL with {jobid}
    # the read service (`jobio serve`) and its clients (docs/deploy.md, docs/service.md)
    server: str | None = None  # client mode: "https://dbhost:8453"
    server_ca: Path | None = None  # CA file the client trusts for the service's certificate
    server_timeout: float = 60.0
    munge_socket: str | None = None  # munged's socket (default: munge's own default)
    service_listen: str = "0.0.0.0"
    service_port: int = 8453
    service_tls_cert: Path | None = None
    service_tls_key: Path | None = None
    service_threads: int = 16
    service_processes: int = 1
    service_max_ttl: int = 300  # credentials that live longer are refused
    # limits that hold before authentication (docs/service.md "Limits")
    service_handshake_timeout: float = 5.0  # seconds for the whole TLS handshake
    service_head_timeout: float = 10.0  # seconds for a whole request head and body
    service_idle_timeout: float = 30.0  # keep-alive: seconds between requests
    service_max_line: int = 16384  # bytes of the request line or of one header
    service_max_head: int = 65536  # bytes of a whole request head
    service_max_per_peer: int = 256  # open connections from one address (a login node)
    service_max_unauthenticated: int = 1024  # open connections without an accepted credential
    service_max_ids: int = 256  # distinct job ids in one request
    service_max_answer: int = 64 * 1024 * 1024  # bytes of one answer
    service_max_queued: int = 64  # requests of one uid waiting for a worker
    service_max_running: int = 4  # requests of one uid running at once (of `threads`)
    source: Path | None = None  # the file this came from

    def __init__(self, **values: Any) -> None:
        unknown = values.keys() - FIELDS.keys()
        if unknown:
            raise TypeError(f"Config() got an unexpected keyword argument "
                            f"{sorted(unknown)[0]!r}")
        if "state_dir" not in values:
            values["state_dir"] = default_state_dir()
        if "collector_name" not in values:
            values["collector_name"] = socket.gethostname().split(".")[0]
        self.__dict__.update(values)

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenConfig(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenConfig(f"cannot delete field {name!r}")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Config(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in FIELDS) + ")"

    def replace(self, **kw: Any) -> Config:
        """A copy with these fields changed (what dataclasses.replace did)."""
        return Config(**{**{n: getattr(self, n) for n in FIELDS}, **kw})

    @property
    def spool(self) -> Path:
        return self.spool_dir or self.state_dir / "spool"

    def with_overrides(self, **kw: Any) -> Config:
        """Apply flags: a None value means "flag not given"."""
        return self.replace(**{k: v for k, v in kw.items() if v is not None})


class FrozenConfig(AttributeError):
    """A Config is never changed in place (use `replace`): one is shared by threads."""


# the fields in their order (the class's annotations; `from __future__ import annotations`
# keeps them strings, nothing is evaluated)
FIELDS: dict[str, str] = dict(Config.__annotations__)


def _mail_policy(value: str) -> str:
    if value not in ("all", "mail_type_end", "above_size", "off"):
        raise ValueError(f"{value!r}: use all, mail_type_end, above_size or off")
    return value


def _byte_size(value: int | str) -> int:
    """1073741824, "1GiB", "500 MB", "2T" -> bytes."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B?)\s*", str(value), re.I)
    if not m:
        raise ValueError(f"{value!r} is not a size (e.g. 1073741824, 1GiB, 500MB)")
    base = 1024 if m.group(3).lower().startswith("i") or not m.group(3) else 1000
    return int(float(m.group(1)) * base ** "_KMGTP".index(m.group(2).upper() or "_"))


_KEYS: dict[str, tuple[str, Any]] = {
    "dsn": ("dsn", str),
    "read_dsn": ("read_dsn", str),
    "cluster": ("cluster", str),
    "state_dir": ("state_dir", Path),
    "collect.command": ("command", str),
    "collect.interval": ("interval", float),
    "collect.name": ("collector_name", str),
    "collect.spool_dir": ("spool_dir", Path),
    "collect.command_timeout": ("command_timeout", float),
    "collect.replay_window": ("replay_window", str),
    "jobid.formats": ("jobid_formats", tuple),
    "jobid.system_uid_max": ("system_uid_max", int),
    "jobid.system_uids": ("system_uids", tuple),
    "privacy.admin_group": ("admin_group", str),
    "mail.policy": ("mail_policy", _mail_policy),
    "mail.min_bytes": ("mail_min_bytes", _byte_size),
    "mail.domain": ("mail_domain", str),
    "mail.address": ("mail_address", str),
    "mail.from": ("mail_from", str),
    "mail.template_dir": ("mail_template_dir", Path),
    "mail.slurm_lookup": ("mail_slurm_lookup", bool),
    "mail.advice.kb_ops": ("mail_advice_kb_ops", float),
    "mail.advice.small_share": ("mail_advice_small_share", float),
    "mail.advice.min_requests": ("mail_advice_min_requests", int),
    "mail.advice.metadata_per_node_hour": ("mail_advice_metadata_per_node_hour", float),
    "mail.advice.min_metadata_ops": ("mail_advice_min_metadata_ops", int),
    "hook.spool_dir": ("hook_spool_dir", Path),
    "hook.db_timeout": ("hook_db_timeout", float),
    "mail.host": ("mail_host", str),
    "mail.port": ("mail_port", int),
    "mail.starttls": ("mail_starttls", bool),
    "mail.ssl": ("mail_ssl", bool),
    "mail.user": ("mail_user", str),
    "mail.password_file": ("mail_password_file", Path),
    "mail.timeout": ("mail_timeout", float),
    "report.interval": ("report_interval", float),
    "report.max_wait": ("report_max_wait", float),
    "report.sweep_every": ("report_sweep_every", float),
    "report.sweep_hours": ("report_sweep_hours", float),
    "report.max_attempts": ("report_max_attempts", int),
    "report.retry_base": ("report_retry_base", float),
    "report.replay_window": ("report_replay_window", str),
    "mail.smtp_host": ("mail_host", str),  # aliases of mail.host/port (`jobio daily`)
    "mail.smtp_port": ("mail_port", int),
    "slurm.sacct": ("sacct", str),
    "slurm.scontrol": ("scontrol", str),
    "retention.raw": ("retention_raw", str),
    "retention.results": ("retention_results", str),
    "lassi.a": ("lassi_a", float),
    "lassi.baseline_days": ("lassi_baseline_days", int),
    "exporter.listen": ("exporter_listen", str),
    "exporter.top_jobs": ("exporter_top_jobs", int),
    "exporter.top_users": ("exporter_top_users", int),
    "exporter.top_accounts": ("exporter_top_accounts", int),
    "exporter.targets": ("exporter_targets", bool),
    "alerts.admin": ("alerts_admin", str),
    "alerts.window": ("alerts_window", float),
    "alerts.risk": ("alerts_risk", float),
    "alerts.metadata_ops": ("alerts_metadata_ops", float),
    "alerts.small_writes": ("alerts_small_writes", int),
    "alerts.small_write_size": ("alerts_small_write_size", _byte_size),
    "alerts.sustained": ("alerts_sustained", float),
    "alerts.daily_cap": ("alerts_daily_cap", int),
    "alerts.link": ("alerts_link", str),
    "server": ("server", str),
    "server_ca": ("server_ca", Path),
    "server_timeout": ("server_timeout", float),
    "munge.socket": ("munge_socket", str),
    "service.listen": ("service_listen", str),
    "service.port": ("service_port", int),
    "service.tls_cert": ("service_tls_cert", Path),
    "service.tls_key": ("service_tls_key", Path),
    "service.threads": ("service_threads", int),
    "service.processes": ("service_processes", int),
    "service.max_ttl": ("service_max_ttl", int),
    "service.handshake_timeout": ("service_handshake_timeout", float),
    "service.head_timeout": ("service_head_timeout", float),
    "service.idle_timeout": ("service_idle_timeout", float),
    "service.max_line": ("service_max_line", _byte_size),
    "service.max_head": ("service_max_head", _byte_size),
    "service.max_per_peer": ("service_max_per_peer", int),
    "service.max_unauthenticated": ("service_max_unauthenticated", int),
    "service.max_ids": ("service_max_ids", int),
    "service.max_answer": ("service_max_answer", _byte_size),
    "service.max_queued": ("service_max_queued", int),
    "service.max_running": ("service_max_running", int),
}


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def config_path(explicit: Path | None = None) -> Path | None:
    if explicit is not None:
        return explicit
    env = os.environ.get("SLURM_IO_CONFIG")
    if env:
        return Path(env)
    return SYSTEM_CONFIG if SYSTEM_CONFIG.exists() else None


def load(explicit: Path | None = None) -> Config:
    path = config_path(explicit)
    if path is None:
        values: dict[str, Any] = {}
    else:
        try:
            with open(path, "rb") as f:
                values = _flatten(tomllib.load(f))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as e:  # not UTF-8
            raise ConfigError(f"{path}: {e}") from e
    kw: dict[str, Any] = {"source": path}
    for key, value in values.items():
        if key not in _KEYS:
            raise ConfigError(f"{path}: unknown key {key!r} (known: {', '.join(sorted(_KEYS))})")
        attr, typ = _KEYS[key]
        try:
            kw[attr] = tuple(value) if typ is tuple else typ(value)
        except (TypeError, ValueError, OverflowError) as e:  # OverflowError: int(inf)
            raise ConfigError(f"{path}: bad value for {key!r}: {e}") from e
    env_dsn = os.environ.get("SLURM_IO_DSN")
    if env_dsn:
        kw["dsn"] = env_dsn
    return Config(**kw)
