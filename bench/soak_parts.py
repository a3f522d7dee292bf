"""The soak's site around the daemons (bench/soak.py): the real SMTP sink the tests use, a
real Prometheus scraping `jobio exporter`, the hook run as slurmctld runs it, and the
timers (`jobio alerts`, `daily`, `db prune`), each started as its own process.

Why here and not in soak.py: soak.py is the run and its bounds; these are the parts it
starts, each stopped by its own process id.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parent.parent
HOOK = REPO / "epilog" / "jobio-epilog"


def hook_wrapper(path: Path, config: Path) -> Path:
    """The two-line wrapper docs/hook.md has sites write: slurmctld passes neither the
    Python nor the config file."""
    path.write_text(f"#!/bin/sh\nJOBIO_PYTHON={sys.executable}\nSLURM_IO_CONFIG={config}\n"
                    f"export JOBIO_PYTHON SLURM_IO_CONFIG\nexec {HOOK}\n")
    path.chmod(0o755)
    return path


def run_hook(wrapper: Path, env: dict[str, str]) -> tuple[int, str]:
    """The hook as slurmctld runs it: SLURM_* variables only (no PATH), cwd /; (exit
    status, what it wrote), and it must always exit 0 with nothing to say."""
    proc = subprocess.run([str(wrapper)], env=env, capture_output=True, text=True,
                          timeout=60, check=False, cwd="/")
    return proc.returncode, (proc.stdout + proc.stderr).strip()


class Timer:
    """A systemd timer's service on the compressed clock: `argv(sim)` started every
    `period` simulated seconds, never two at once (a run still going skips its turn, as
    systemd does); its output appended to `log`, each non-zero exit counted."""

    def __init__(self, name: str, period: float, argv: Callable[[float], list[str] | None],
                 env: dict[str, str], log: Path, popen: dict[str, Any] | None = None) -> None:
        self.name, self.period, self.argv, self.env, self.log = name, period, argv, env, log
        self.popen = popen or {}  # e.g. user= and group=: a command run as a user
        self.next: float | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.runs = self.failures = self.skipped = 0

    def tick(self, sim: float) -> None:
        self._reap()
        if self.next is None:
            self.next = sim - sim % self.period + self.period
        if sim < self.next:
            return
        self.next += self.period * max(1, int((sim - self.next) // self.period) + 1)
        if self.proc is not None:
            self.skipped += 1
            return
        argv = self.argv(sim)
        if argv is None:
            return
        with self.log.open("ab") as f:
            f.write(f"--- {time.strftime('%H:%M:%S')} {' '.join(argv[3:])}\n".encode())
            f.flush()
            self.proc = subprocess.Popen(argv, env=self.env, stdout=f, stderr=f,
                                         **self.popen)
        self.runs += 1

    def _reap(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            self.failures += self.proc.returncode != 0
            self.proc = None

    def finish(self, timeout: float = 300.0) -> None:
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reap()


def start_prometheus(out: Path, target: str, port: int) -> subprocess.Popen[bytes]:
    """Debian's Prometheus scraping `target` every 5 s of wall time (2 simulated hours at
    1440), its data under `out`: a loaded box's exporter may take more than a second."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise SystemExit("no prometheus: SLURM_IO_EXTRAS=test scripts/setup.sh installs it")
    cfg = out / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 5s\n  scrape_timeout: 5s\n"
                   "scrape_configs:\n  - job_name: jobio\n    static_configs:\n"
                   f"      - targets: ['{target}']\n")
    data = out / "prometheus-data"
    shutil.rmtree(data, ignore_errors=True)
    log = (out / "prometheus.log").open("wb")
    proc = subprocess.Popen([binary, f"--config.file={cfg}", f"--storage.tsdb.path={data}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=log, stderr=log, cwd=out)
    deadline = time.time() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5):
                return proc
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"prometheus did not start: {out / 'prometheus.log'}"
                                 ) from None
            time.sleep(0.2)


def prom_query(port: int, promql: str) -> float | None:
    """One PromQL value (the first series), None when there is none or no answer."""
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            body = json.loads(r.read())
    except OSError:
        return None
    res = body.get("data", {}).get("result", [])
    return float(res[0]["value"][1]) if res else None


def file_size(path: Path) -> int:
    """A file's size, 0 once it is gone: a collector removes its spool batch as it stores
    it, between the sampler's listing of the spool and its stat of the file."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def dir_bytes(path: Path) -> int:
    return sum(file_size(f) for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def proc_usage(pid: int) -> tuple[int, int]:
    """(RSS bytes, open files) of a live process; (0, 0) once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = next(int(line.split()[1]) * 1024 for line in status.splitlines()
                   if line.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return 0, 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, timeout: float = 120.0) -> None:
    """Until `url` answers (the exporter started): a loaded box takes seconds to import it."""
    deadline = time.time() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                r.read()
            return
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)
