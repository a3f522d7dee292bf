"""`Slurm`: runs sacct and scontrol (imperative shell; the parsers it calls are pure)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from slurm_io import procs
from slurm_io.slurm.fields import SACCT_FIELDS, SACCT_FIELDS_SLUID
from slurm_io.slurm.scontrol import cluster_name

DEFAULT_SACCT = "/usr/bin/sacct"
DEFAULT_SCONTROL = "/usr/bin/scontrol"
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")
SLUID_SINCE = (24, 11)  # the first release whose sacct knows the SLUID field (README of 24.11)


class SlurmError(RuntimeError):
    """A Slurm command is missing, failed or did not finish in time (one line, for people)."""


def parse_version(text: str) -> tuple[int, int] | None:
    """`slurm 24.11.5` / `slurm-wlm 22.05.8` (what `sacct --version` prints) -> (24, 11)."""
    m = _VERSION.search(text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass
class Slurm:
    """Slurm's commands as one object: paths, timeout, environment, release.

    `env` None: this process's environment. SLURM_TIME_FORMAT is always `standard` so that a
    site's or user's setting cannot change the times sacct and scontrol print.
    """

    sacct: str = DEFAULT_SACCT
    scontrol: str = DEFAULT_SCONTROL
    timeout: float = 120.0
    env: Mapping[str, str] | None = None
    # what was asked once per object (the release, the cluster name): None is an answer too
    _asked: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def from_config(cls, cfg: Any, **overrides: Any) -> Slurm:
        """From a Config's `[slurm]` keys (sacct None there: the default path)."""
        kw = {"sacct": getattr(cfg, "sacct", None) or DEFAULT_SACCT,
              "scontrol": getattr(cfg, "scontrol", None) or DEFAULT_SCONTROL}
        kw.update({k: v for k, v in overrides.items() if v is not None})
        sacct = overrides.get("sacct")
        configured = getattr(cfg, "scontrol", None)
        if sacct and not overrides.get("scontrol") and configured in (None, DEFAULT_SCONTROL):
            # a sacct given by path (`jobs sync --sacct`) belongs to a Slurm installation:
            # its scontrol is the one beside it, not the default one of another cluster
            sibling = os.path.join(os.path.dirname(sacct), "scontrol")
            if os.path.isabs(sibling) and os.access(sibling, os.X_OK):
                kw["scontrol"] = sibling
        return cls(**kw)

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ if self.env is None else self.env)
        env["SLURM_TIME_FORMAT"] = "standard"
        return env

    def path(self, tool: str) -> str:
        if tool == "sacct":
            return self.sacct
        if tool == "scontrol":
            return self.scontrol
        raise ValueError(f"unknown Slurm command {tool!r}")

    def run(self, tool: str, args: Sequence[str], *, timeout: float | None = None) -> str:
        """The command's stdout; SlurmError when it cannot run, fails or hangs."""
        path = self.path(tool)
        argv = [path, *args]
        limit = self.timeout if timeout is None else timeout
        try:
            # surrogateescape: a job name or work dir may hold any byte but NUL; the parsers
            # clean them (slurm_io.text), a strict decode would fail the whole run
            proc = procs.run(argv, timeout=limit, env=self._environment(), text=True,
                             errors="surrogateescape")
        except FileNotFoundError as e:
            raise SlurmError(f"{path}: not found (give the path with --{tool} or "
                             f"[slurm] {tool} in the config)") from e
        except PermissionError as e:
            raise SlurmError(f"{path}: not executable: {e}") from e
        except procs.Timeout as e:
            raise SlurmError(f"{tool} did not finish within {limit:.0f} s") from e
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().splitlines()
            raise SlurmError(f"{tool} failed (exit {proc.returncode}): "
                             f"{detail[-1] if detail else 'no message'}; command: "
                             f"{' '.join(argv)}")
        return proc.stdout

    def try_run(self, tool: str, args: Sequence[str], *, timeout: float | None = None
                ) -> str | None:
        """`run`, but None instead of an error (lookups that have a fallback)."""
        try:
            return self.run(tool, args, timeout=timeout)
        except SlurmError:
            return None

    # -- the release -----------------------------------------------------------------------
    def release(self) -> tuple[int, int] | None:
        """(major, minor) of the Slurm that sacct talks to; None when sacct does not say.
        Asked once per object (`sacct --version`, a local call: no daemon involved)."""
        return self._once("release", lambda: parse_version(self.try_run(
            "sacct", ["--version"], timeout=min(self.timeout, 30.0)) or ""))

    def cluster(self) -> str | None:
        """The name of the cluster the controller serves (`scontrol show config`): the
        cluster whose jobs a plain sacct lists. None when scontrol cannot tell (controller
        down). Asked once per object."""
        return self._once("cluster", lambda: cluster_name(self.try_run(
            "scontrol", ["show", "config"], timeout=min(self.timeout, 30.0)) or ""))

    def _once(self, key: str, ask: Callable[[], Any]) -> Any:
        """`ask()` the first time `key` is wanted, its answer (None included) after that."""
        if key not in self._asked:
            self._asked[key] = ask()
        return self._asked[key]

    def sacct_fields(self) -> tuple[str, ...]:
        """The job fields to ask sacct for on this release (SLUID from 24.11)."""
        release = self.release()
        return SACCT_FIELDS_SLUID if release and release >= SLUID_SINCE else SACCT_FIELDS

    # -- what the rest of slurm-io asks ----------------------------------------------------
    def sacct_jobs(self, window: tuple[str, str] | None = None, jobs: Sequence[int] = (),
                   *, timeout: float | None = None) -> str:
        """`sacct -a -X -D -P --format=<fields>` (-D: every run of a requeued job) for a
        time window (-S/-E, sacct's local time) and/or job ids (-j); the text, for
        jobs.sacct.parse_sacct."""
        ids = [_slurm_id(j) for j in jobs]  # before anything runs
        args = ["-a", "-X", "-D", "-P", f"--format={','.join(self.sacct_fields())}"]
        if window is not None:
            args += ["-S", window[0], "-E", window[1]]
        if ids:
            args += ["-j", ",".join(ids)]
        return self.run("sacct", args, timeout=timeout)

    def show_job(self, job: int, *, timeout: float | None = None) -> str | None:
        """`scontrol show job -o JOB` while the job is in slurmctld's memory; None when it
        is not (MinJobAge after its end) or scontrol cannot run."""
        return self.try_run("scontrol", ["show", "job", "-o", _slurm_id(job)], timeout=timeout)

    def sacct_mail(self, job: int, *, timeout: float | None = None) -> str | None:
        """`sacct -X -n -P -o JobIDRaw,MailUser,MailType -j JOB` (releases whose sacct has
        these fields); None when sacct cannot run or refuses them."""
        return self.try_run("sacct", ["-X", "-n", "-P", "-j", _slurm_id(job),
                                      "-o", "JobIDRaw,MailUser,MailType"], timeout=timeout)


def _slurm_id(job: int) -> str:
    """A job id as Slurm reads it. Slurm parses ids into 32 bits, so a larger number would
    wrap round to another job's id (2^32 + 4 -> 4): such a number -- a slurm-io row key
    (sql/0020) given where a raw id belongs -- is refused, not passed on."""
    n = int(job)
    if not 0 < n < 2**32:
        raise ValueError(f"not a Slurm job id: {n}")
    return str(n)
