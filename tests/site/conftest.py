"""A site as users meet it: the installed `jobio`, run as real OS users.

`public_venv` is a virtualenv built from the system Python (/usr/bin/python3) in a 0755
directory under /tmp, with slurm-io installed from this checkout (not editable), so that
alice, bob and carol can execute it as they would on a login node. `site_db` is the privacy
test's database (tests/privacy: users, roles, the admin group) plus finished jobs of alice and
bob, an array of alice's and collector bookkeeping, so that every figure is final and what a
user sees can be compared byte for byte with what root sees.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.model import IdClass
from tests.privacy.privacy_db import ADMIN, RUNUSER, db, uids  # noqa: F401  (fixtures)
from tests.public_dirs import public_tmp_dir

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"
T1 = datetime(2024, 4, 3, 8, 0, tzinfo=UTC)
# job -> (owner, jobid, array_job, hours); every one finished, on node01
SITE_JOBS = {
    8101: ("alice", "8101", None, 2),
    8201: ("alice", "8200_1", 8200, 1),
    8202: ("alice", "8200_2", 8200, 1),
    8301: ("bob", "8301", None, 3),
}


@pytest.fixture(scope="session")
def public_dir() -> Iterator[Path]:
    """A 0755 directory under /tmp that every user can enter."""
    with public_tmp_dir("slurm-io-site-") as path:
        yield path


@pytest.fixture(scope="session")
def public_venv(public_dir: Path) -> Path:
    """The bin/ directory of a venv of /usr/bin/python3 with this checkout installed."""
    if not Path(SYSTEM_PYTHON).exists():
        pytest.fail(f"{SYSTEM_PYTHON} missing: run SLURM_IO_EXTRAS=test scripts/setup.sh")
    venv = public_dir / "venv"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", str(venv)], check=True)
    # a copy of the checkout (its .venv and out/ left out): pip builds in the source tree
    src = public_dir / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".venv", ".git", "out", "__pycache__", "*.egg-info", "build"))
    proc = subprocess.run([str(venv / "bin/pip"), "install", "-q", f"{src}[all]"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shutil.rmtree(src, ignore_errors=True)
    for p in [public_dir, *venv.rglob("*")]:
        mode = p.lstat().st_mode
        if not p.is_symlink():
            os.chmod(p, mode | 0o044 | (0o011 if mode & 0o100 or p.is_dir() else 0))
    return venv / "bin"


@dataclass(frozen=True)
class Site:
    """Where the site's database is and how each party reaches it."""

    pg_dsn: str  # the session server, superuser
    database: str
    dir: Path  # 0755, for configs and outputs
    jobio: Path  # the installed command

    @property
    def superuser_dsn(self) -> str:
        return make_conninfo(self.pg_dsn, dbname=self.database)

    @property
    def user_dsn(self) -> str:
        """Peer authentication as the OS account: no user=."""
        d = conninfo_to_dict(self.pg_dsn)
        return make_conninfo("", host=d["host"], port=d.get("port", "5432"),
                             dbname=self.database)

    def config(self, name: str, text: str) -> Path:
        path = self.dir / f"{name}.toml"
        path.write_text(text)
        os.chmod(path, 0o644)
        return path


def run_as(user: str | None, jobio: Path, args: list[str], *, config: Path | None = None,
           env: dict[str, str] | None = None, timeout: float = 120,
           cwd: str = "/") -> subprocess.CompletedProcess[str]:
    """Run the installed `jobio` as OS user `user` (None: root), with a clean environment."""
    home = pwd.getpwnam(user).pw_dir if user else "/root"
    environ = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": home,
               "PGCONNECT_TIMEOUT": "10", **(env or {})}
    if config is not None:
        environ["SLURM_IO_CONFIG"] = str(config)
    cmd = [str(jobio), *args]
    if user:
        cmd = [RUNUSER, "-u", user, "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env=environ, check=False)


def _load_site_jobs(conn: psycopg.Connection, uid_of: dict[str, int]) -> None:
    with conn.transaction():
        host = conn.execute("SELECT host_id FROM host WHERE name = 'node01'").fetchone()
        assert host is not None
        for job, (owner, jobid, array, hours) in SITE_JOBS.items():
            end = T1 + timedelta(hours=hours)
            conn.execute(
                "INSERT INTO job (job, jobid, array_job, array_task, uid, user_name, account, "
                "partition, name, nodes, start_time, end_time, state, exit_code, work_dir, "
                "source) VALUES (%s, %s, %s, %s, %s, %s, 'proj', 'batch', %s, '{node01}', "
                "%s, %s, 'COMPLETED', '0:0', %s, 'test')",
                (job, jobid, array, jobid.split("_")[1] if array else None, uid_of[owner],
                 owner, f"run-{job}", T1, end, f"/home/{owner}/run"))
            conn.execute("INSERT INTO job_node (host_id, job, uid, start_time, end_time) "
                         "VALUES (%s, %s, %s, %s, %s)", (host[0], job, uid_of[owner], T1, end))
            conn.execute(
                "INSERT INTO jobstats_delta (ts_start, ts_end, target_id, id_class, job, uid, "
                "host_id, raw_id, read_bytes, read_bytes_samples, write_bytes, "
                "write_bytes_samples, op_open) "
                "SELECT t - interval '10 min', t, 1, %s, %s, %s, %s, %s, 1048576 * g, g, "
                "65536 * g, 2 * g, g FROM generate_series(1, %s) g, "
                "LATERAL (SELECT %s::timestamptz + g * interval '10 min' AS t) x",
                (int(IdClass.EXACT), job, uid_of[owner], host[0], f"{job}:{uid_of[owner]}:node01",
                 hours * 6, T1))
        # every collector has read past the jobs' ends: their figures are final
        conn.execute(
            "INSERT INTO ingest_batch (collector, seq, read_time, n_rows, n_entries, "
            "n_problems, n_repaired, n_unattributable, targets) "
            "VALUES ('oss1', 2, %s, 0, 0, 0, 0, 0, '{}')", (T1 + timedelta(days=1),))


@pytest.fixture(scope="module")
def site(pg_dsn: str, db: str, uids: dict[str, int],  # noqa: F811
         public_dir: Path, public_venv: Path) -> Site:
    from slurm_io.store import partitions

    s = Site(pg_dsn, db, public_dir, public_venv / "jobio")
    with psycopg.connect(s.superuser_dsn) as conn:
        partitions.ensure_partitions(conn, T1.timestamp(), T1.timestamp() + 86400,
                                     ahead_days=0)
        _load_site_jobs(conn, uids)
    return s


# Jobs the job table knows but that never started (or whose start it has not learnt yet):
# `jobio show` says what is missing for each. key -> (owner, the line after "jobio: ").
UNSTARTED_JOBS = {
    8110: ("alice", "job 8110 is pending: no I/O before it starts"),
    8111: ("alice", "job 8111 ended (CANCELLED) before it started: no I/O"),
    8112: ("alice", "job 8112 has no start time recorded yet (sacct/hook not synced)"),
    8310: ("bob", "job 8310 is pending: no I/O before it starts"),
}


@pytest.fixture(scope="module")
def unstarted_jobs(site: Site, uids: dict[str, int]) -> dict[int, tuple[str, str]]:  # noqa: F811
    """UNSTARTED_JOBS stored as Slurm tells them: sacct -P text of two pending jobs and one
    cancelled while pending, and the job-end hook's record of a 22.05 controller (no start,
    end nor state in EpilogSlurmctld's environment) before any sacct sync."""
    from slurm_io.jobs.hookenv import record_from_hook_env
    from slurm_io.jobs.sacct import parse_sacct
    from slurm_io.jobs.store import upsert_jobs

    head = "JobID|JobIDRaw|User|UID|Account|Partition|JobName|NodeList|Submit|Start|End|State"
    rows = [f"8110|8110|alice|{uids['alice']}|proj|batch|wait|None assigned|"
            "2024-04-03T08:00:00|Unknown|Unknown|PENDING",
            f"8111|8111|alice|{uids['alice']}|proj|batch|gone|None assigned|"
            "2024-04-03T08:00:00|None|2024-04-03T09:00:00|CANCELLED by 0",
            f"8310|8310|bob|{uids['bob']}|proj|batch|wait|None assigned|"
            "2024-04-03T08:00:00|Unknown|Unknown|PENDING"]
    records, problems = parse_sacct("\n".join([head, *rows]) + "\n", tz=UTC)
    assert not problems
    records.append(record_from_hook_env({
        "SLURM_JOB_ID": "8112", "SLURM_JOB_UID": str(uids["alice"]), "SLURM_JOB_USER": "alice",
        "SLURM_JOB_ACCOUNT": "proj", "SLURM_JOB_PARTITION": "batch",
        "SLURM_JOB_NODELIST": "node01", "SLURM_JOB_EXIT_CODE2": "0:0"}))
    with psycopg.connect(site.superuser_dsn) as conn:
        upsert_jobs(conn, records)
        conn.commit()
    return UNSTARTED_JOBS


def as_json(proc: subprocess.CompletedProcess[str]) -> object:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
