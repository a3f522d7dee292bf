"""End to end on real parts: real Slurm jobs of two users, job_stats reads generated for
their nodes and times (with `:uid:host` entries), the real collector, `jobio jobs sync`,
and `jobio show --json` checked against the generated I/O; once per Slurm release (22.05 on
the host, 24.11 and 26.05 in chroots: tests/slurm_fixtures.py)."""

from __future__ import annotations

import json
import time

import psycopg
from click.testing import CliRunner

from slurm_io.cli import main
from slurm_io.jobs.store import find_jobs
from slurm_io.simulate.for_jobs import reads_for_jobs


def jobio(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return r.exit_code, r.output


def test_slurm_jobs_of_two_users_get_exactly_the_io_generated_for_them(
        slurm_cluster, db_dsn, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm_cluster.env["SLURM_CONF"])
    monkeypatch.setenv("SLURM_IO_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("")
    t_submit = time.time()
    c = slurm_cluster
    ids = {
        "single": c.submit("alice", ["-J", "single", "-N1", "--wrap", "sleep 6"]),
        "multi": c.submit("alice", ["-J", "multi", "-N3", "--wrap", "sleep 6"]),
        "failed": c.submit("bob", ["-J", "failed", "--wrap", "sleep 5; exit 3"]),
        "array": c.submit("alice", ["-J", "arr", "--array=1-3", "--wrap", "sleep 5"]),
        "cancelled": c.submit("bob", ["-J", "cancelled", "--wrap", "sleep 120"]),
        # a heterogeneous job: two components, each with its own raw id (Lustre's %j)
        "het": c.submit("alice", ["-J", "het", "-N1", ":", "-N2", "--wrap", "sleep 6"]),
    }
    c.wait_running(ids["cancelled"])
    time.sleep(5)
    c.cancel("bob", ids["cancelled"])
    lines = c.wait_finished(ids.values(), tasks={ids["array"]: 3})
    het_raw = sorted(int(ln["JobIDRaw"]) for ln in lines if ln["JobID"].startswith(
        f"{ids['het']}+"))
    assert len(het_raw) == 2 and het_raw[0] == ids["het"]

    code, out = jobio("--dsn", db_dsn, "jobs", "sync", "--since", str(int(t_submit - 60)),
                      "--sacct", c.command("sacct"))
    assert code == 0, out
    with psycopg.connect(db_dsn) as conn:
        # a het job's id names all its components, as in sacct -j (each has its own raw id)
        infos = [i for spec in ids.values() for i in find_jobs(conn, str(spec))]
        states = {i.jobid: i.state for i in infos}
    assert len(infos) == 4 + 3 + 2  # the array's three tasks, the het job's two components
    assert {i.jobid for i in infos if i.raw_id in het_raw} == {f"{ids['het']}+0",
                                                           f"{ids['het']}+1"}
    assert states[str(ids["failed"])] == "FAILED"
    assert states[str(ids["cancelled"])] == "CANCELLED"
    assert {i.uid for i in infos} == {c.uid("alice"), c.uid("bob")}

    from slurm_io.model import JobRecord

    records = [JobRecord(i.raw_id, i.jobid, None, None, i.uid, i.user, i.account, i.partition,
                         i.name, i.nodes, None, i.start, i.end, i.state, i.exit_code, i.work_dir,
                         None, "test") for i in infos]
    expected = reads_for_jobs(records, tmp_path / "reads")
    code, out = jobio("--dsn", db_dsn, "--state-dir", str(tmp_path / "state"), "collect",
                      "--from", str(tmp_path / "reads"))
    assert code == 0, out

    with_io = [i for i in infos if expected[i.raw_id].write_bytes]
    assert len(with_io) == len(infos)  # every job ran long enough for whole read intervals
    # every id form sacct prints: `J`, `A_T` and a het component's `L+o`
    code, out = jobio("--dsn", db_dsn, "show", "--json", *(i.jobid for i in infos))
    assert code == 0, out
    shown = {j["job"]: j for j in json.loads(out)}
    # the SLUID, where the release has one (24.11+: asked from sacct by `jobs sync`)
    if c.version >= (24, 11):
        sluids = {int(ln["JobIDRaw"]): ln["SLUID"]
                  for ln in c.sacct_lines(ids.values(), ["JobIDRaw", "SLUID"])}
        assert {i.raw_id: shown[i.raw_id]["sluid"] for i in infos} == {
            i.raw_id: sluids[i.raw_id] for i in infos}
        assert all(s.startswith("s") for s in sluids.values())
    else:
        assert {shown[i.raw_id]["sluid"] for i in infos} == {None}
    recovered_any = 0
    for i in infos:
        e, j = expected[i.raw_id], shown[i.raw_id]
        assert j["nodes"] == sorted(i.nodes) and j["user"] in ("alice", "bob")
        assert j["totals"].get("write_bytes", 0) == e.write_bytes, i.jobid
        assert j["totals"].get("read_bytes", 0) == e.read_bytes, i.jobid
        assert j["totals"].get("open", 0) == e.open, i.jobid
        rec = j["recovered"].get("read_bytes", 0) + j["recovered"].get("write_bytes", 0)
        assert rec == e.recovered_bytes, i.jobid
        recovered_any += rec
        assert j["ambiguous"] == {}
    assert recovered_any > 0
    # the array: `jobio ARRAYID` shows every task, a task by its display id
    code, out = jobio("--dsn", db_dsn, str(ids["array"]), "-P", "-o", "JobID,User,WriteBytes")
    assert code == 0 and len(out.strip().splitlines()) == 1 + 3
    code, out = jobio("--dsn", db_dsn, f"{ids['array']}_2", "--json")
    assert code == 0 and json.loads(out)[0]["jobid"] == f"{ids['array']}_2"
    code, out = jobio("--dsn", db_dsn, "999999")
    assert code == 1 and "no such job" in out
