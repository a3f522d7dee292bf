"""Two Slurm clusters on one Lustre filesystem, live: the 24.11 and 26.05 testbeds run at the
same time under their own names (scripts/setup-slurm-chroot.sh: lab2411 on trixie01..04,
lab2605 on sid01..04), and a job of each gets the same job id.

Both clusters' records go into one database with `jobio jobs sync` (each from its own sacct),
job_stats reads are generated for both jobs as one filesystem's MDS and OSS would print them
(the same `%j`, each on its own cluster's nodes, some intervals under `:uid:host`), the real
collector stores them, and each job shows exactly its own generated I/O with `jobio show -M`;
without -M the id is ambiguous and `jobio` says so in one line.

Defined only when both releases are selected ($SLURM_IO_SLURM), so that a selection of one
release neither builds the other's chroot nor skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from slurm_io.jobs.store import find_jobs, newest_end
from slurm_io.jobs.sync import OVERLAP
from slurm_io.simulate.for_jobs import reads_for_jobs
from slurm_io.text import clean
from tests.slurm_fixtures import SlurmCluster, ensure_cluster, selected_releases

BOTH = ("24.11", "26.05")
JOBIO = str(Path(sys.executable).with_name("jobio"))


def _jobio(dsn: str, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed `jobio`, as a person runs it (no Slurm variables of this shell)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(SLURM_IO_DSN=dsn, SLURM_IO_CONFIG=str(config))
    return subprocess.run([JOBIO, *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def _cluster_name(c: SlurmCluster) -> str:
    out = c.run(["scontrol", "show", "config"]).stdout
    return next(line.split("=", 1)[1].strip() for line in out.splitlines()
                if line.split("=", 1)[0].strip() == "ClusterName")


def _last_id(c: SlurmCluster) -> int:
    """Submit a held job and cancel it: the id the cluster gave last."""
    job = c.submit("alice", ["-H", "-J", "pad", "--wrap", "true"])
    c.cancel("alice", job)
    return job


def _same_next_id(a: SlurmCluster, b: SlurmCluster) -> None:
    """Use up job ids on the cluster that is behind, so that both give the same id next."""
    ia, ib = _last_id(a), _last_id(b)
    behind, gap = (a, ib - ia) if ia < ib else (b, ia - ib)
    if gap:
        behind.run(["bash", "-c", f"for i in $(seq {gap}); do sbatch -H -J pad --parsable "
                                  f"--wrap true >/dev/null; done; scancel -n pad"],
                   user="alice", cwd=behind.job_dir("alice"))


if set(BOTH) <= set(selected_releases()):
    @pytest.mark.pg
    @pytest.mark.slow
    def test_the_same_job_id_on_two_live_clusters_is_two_jobs_each_with_its_own_io(
            db_dsn: str, tmp_path: Path) -> None:
        cfg = tmp_path / "none.toml"
        cfg.write_text("")
        clusters = {r: ensure_cluster(r) for r in BOTH}
        names = {r: _cluster_name(c) for r, c in clusters.items()}
        assert len(set(names.values())) == 2, names
        a, b = clusters.values()
        t_submit = time.time()
        _same_next_id(a, b)
        ids = {r: c.submit("alice", ["-J", "twin", "-N2", "--wrap", "sleep 8"])
               for r, c in clusters.items()}
        assert len(set(ids.values())) == 1, ids  # one id, two clusters
        (raw,) = set(ids.values())
        for r, c in clusters.items():
            c.wait_finished([ids[r]])
            sync = _jobio(db_dsn, cfg, "jobs", "sync", "--since", str(int(t_submit - 60)),
                          "--sacct", c.command("sacct"))
            assert sync.returncode == 0, sync.stderr

        with psycopg.connect(db_dsn) as conn:
            infos = find_jobs(conn, str(raw))
        assert sorted((i.cluster, i.raw_id) for i in infos) == sorted(
            (n, raw) for n in names.values())
        by_cluster = {i.cluster: i for i in infos}
        for r, prefix in zip(BOTH, ("trixie", "sid"), strict=True):  # each on its own nodes
            nodes = by_cluster[names[r]].nodes
            assert len(nodes) == 2 and all(n.startswith(prefix) for n in nodes), nodes
        # a sync without --since resumes a day before the latest end of its own cluster
        # (the scontrol beside the sacct named it), not of whichever cluster synced last
        for r, c in clusters.items():
            again = _jobio(db_dsn, cfg, "jobs", "sync", "--sacct", c.command("sacct"))
            assert again.returncode == 0, again.stderr
            with psycopg.connect(db_dsn) as conn:
                own = (newest_end(conn, names[r]) or 0) - OVERLAP
            assert time.strftime("since %Y-%m-%dT%H:%M:%S", time.localtime(own)) in \
                again.stdout, (names[r], again.stdout)

        from slurm_io.model import JobRecord

        records = [JobRecord(i.raw_id, i.jobid, None, None, i.uid, i.user, i.account,
                             i.partition, i.name, i.nodes, None, i.start, i.end, i.state,
                             i.exit_code, i.work_dir, None, "test", None, i.cluster)
                   for i in infos]
        expected = reads_for_jobs(records, tmp_path / "reads", key=lambda r: r.cluster)
        collect = _jobio(db_dsn, cfg, "--state-dir", str(tmp_path / "state"), "collect",
                         "--from", str(tmp_path / "reads"))
        assert collect.returncode == 0, collect.stderr

        # without -M the id names two jobs: one line, non-zero, naming both clusters
        both = _jobio(db_dsn, cfg, str(raw))
        assert both.returncode != 0
        assert len(both.stderr.strip().splitlines()) == 1 and "-M" in both.stderr
        assert all(n in both.stderr for n in names.values()), clean(both.stderr)
        recovered = 0
        for name in names.values():
            shown = _jobio(db_dsn, cfg, "show", "-M", name, "--json", str(raw))
            assert shown.returncode == 0, shown.stderr
            (doc,) = json.loads(shown.stdout)
            e = expected[name]
            assert (doc["cluster"], doc["job"]) == (name, raw)
            assert doc["totals"].get("write_bytes", 0) == e.write_bytes > 0, name
            assert doc["totals"].get("read_bytes", 0) == e.read_bytes, name
            assert doc["totals"].get("open", 0) == e.open, name
            rec = doc["recovered"].get("read_bytes", 0) + doc["recovered"].get("write_bytes", 0)
            assert rec == e.recovered_bytes, name
            recovered += rec
        assert recovered > 0  # some intervals came under `:uid:host` and were recovered
