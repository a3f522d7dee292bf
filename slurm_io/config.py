"""Configuration: one TOML file, every key also settable by a command-line flag.

Lookup: `--config FILE`, else $SLURM_IO_CONFIG, else /etc/slurm-io/config.toml when it
exists, else built-in defaults. The database: `--dsn`, else $SLURM_IO_DSN, else the `dsn`
key, else the embedded private PostgreSQL. See docs/configuration.md for every key.
"""

from __future__ import annotations

import os
import socket
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from slurm_io.paths import default_state_dir

SYSTEM_CONFIG = Path("/etc/slurm-io/config.toml")
DEFAULT_COMMAND = "lctl get_param mdt.*.job_stats obdfilter.*.job_stats"


class ConfigError(ValueError):
    """The configuration file is unreadable or has a wrong key or value."""


@dataclass(frozen=True)
class Config:
    dsn: str | None = None
    state_dir: Path = field(default_factory=default_state_dir)
    # collector
    command: str = DEFAULT_COMMAND
    interval: float = 120.0
    collector_name: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    spool_dir: Path | None = None
    command_timeout: float = 90.0
    # job id grammar
    jobid_formats: tuple[str, ...] = ("%j:%u:%H", "%e.%u")
    system_uid_max: int = 999
    system_uids: tuple[int, ...] = (65534,)
    # privacy: members of this Unix group see every job (database role jobio_admin)
    admin_group: str = "slurmio-admin"
    source: Path | None = None  # the file this came from

    @property
    def spool(self) -> Path:
        return self.spool_dir or self.state_dir / "spool"

    def with_overrides(self, **kw: Any) -> Config:
        """Apply flags: a None value means "flag not given"."""
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


_KEYS: dict[str, tuple[str, type]] = {
    "dsn": ("dsn", str),
    "state_dir": ("state_dir", Path),
    "collect.command": ("command", str),
    "collect.interval": ("interval", float),
    "collect.name": ("collector_name", str),
    "collect.spool_dir": ("spool_dir", Path),
    "collect.command_timeout": ("command_timeout", float),
    "jobid.formats": ("jobid_formats", tuple),
    "jobid.system_uid_max": ("system_uid_max", int),
    "jobid.system_uids": ("system_uids", tuple),
    "privacy.admin_group": ("admin_group", str),
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
    cfg = Config()
    if path is None:
        values: dict[str, Any] = {}
    else:
        try:
            with open(path, "rb") as f:
                values = _flatten(tomllib.load(f))
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"{path}: {e}") from e
    kw: dict[str, Any] = {"source": path}
    for key, value in values.items():
        if key not in _KEYS:
            raise ConfigError(f"{path}: unknown key {key!r} (known: {', '.join(sorted(_KEYS))})")
        attr, typ = _KEYS[key]
        try:
            kw[attr] = tuple(value) if typ is tuple else typ(value)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{path}: bad value for {key!r}: {e}") from e
    env_dsn = os.environ.get("SLURM_IO_DSN")
    if env_dsn:
        kw["dsn"] = env_dsn
    return replace(cfg, **kw)
