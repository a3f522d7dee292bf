"""The simulator writes a deterministic, self-consistent history of a cluster.

The files are read back here with a few regular expressions only (no project parser), so that
these tests pin the simulator's output independently of the parse stage.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from slurm_io.model import METADATA_OPS
from slurm_io.parse.render import RELEASES, counter_names
from slurm_io.simulate import simulate

ROOT = Path(__file__).parents[2]
START = 1_700_000_037.0  # deliberately not on a read boundary
PARAMS: dict[str, Any] = {"seed": 7, "start": START, "hours": 3, "n_nodes": 24, "n_oss": 6,
                          "n_users": 8, "jobs_per_hour": 12}
SMALL: dict[str, Any] = {"seed": 3, "start": START, "hours": 1, "n_nodes": 8, "n_oss": 2,
                         "n_users": 4, "jobs_per_hour": 8}
SACCT_HEADER = ("JobID|JobIDRaw|JobName|User|UID|Group|GID|Account|Partition|State|ExitCode|"
                "Submit|Start|End|Elapsed|NNodes|NodeList|WorkDir|SubmitLine")
METRICS = ("read_bytes", "write_bytes", "metadata_ops")

BLOCK = re.compile(r"^(\S+)\.job_stats=", re.M)
ENTRY = re.compile(r"^- job_id: {10}(.*)$", re.M)
COUNTER = re.compile(r"^ +(\w+): +\{ samples: +(\d+), unit: +\w+(?:, min: *\d+, max: *\d+,"
                     r" sum: *(\d+))?", re.M)
TIME = re.compile(r"^ *(snapshot_time|start_time) *: +([\d.]+)", re.M)


class Counters(NamedTuple):
    start: str | None
    snapshot: float
    rb: int
    wb: int
    md: int
    requests: int  # all samples of all counters


def parse_read(text: str) -> dict[tuple[str, str], Counters]:
    """(target, printed id) -> counters of one `lctl get_param` output."""
    out = {}
    parts = BLOCK.split(text)
    for param, body in zip(parts[1::2], parts[2::2], strict=True):
        kind, target = param.split(".", 1)
        chunks = ENTRY.split(body)
        for raw, chunk in zip(chunks[1::2], chunks[2::2], strict=True):
            sums, md, requests = {}, 0, 0
            for name, samples, total in COUNTER.findall(chunk):
                requests += int(samples)
                if total:
                    sums[name] = int(total)
                if kind == "mdt" and name in METADATA_OPS:
                    md += int(samples)
            times = dict(TIME.findall(chunk))
            out[(target, raw)] = Counters(times.get("start_time"),
                                          float(times["snapshot_time"]),
                                          sums.get("read_bytes", 0), sums.get("write_bytes", 0),
                                          md, requests)
    return out


def decode(printed: str) -> str:
    if len(printed) > 1 and printed[0] == printed[-1] == '"':
        printed = printed[1:-1]
    return re.sub(r"\\x([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), printed)


def expand_hostlist(text: str) -> list[str]:
    hosts = []
    for prefix, ranges, single in re.findall(r"([a-z]+)\[([\d,-]+)\]|([a-z]+\d+)", text):
        if single:
            hosts.append(single)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            hosts += [f"{prefix}{n:0{len(lo)}d}" for n in range(int(lo), int(hi or lo) + 1)]
    return hosts


@dataclass
class Sim:
    out: Path
    summary: dict[str, Any]
    manifest: dict[str, Any]
    truth: dict[str, Any]
    reads: dict[str, list[tuple[int, dict[tuple[str, str], Counters]]]]
    texts: dict[str, list[str]]
    sacct: list[dict[str, str]]


def load(out: Path, summary: dict[str, Any]) -> Sim:
    manifest = json.loads((out / "manifest.json").read_text())
    reads, texts = {}, {}
    for server in manifest["servers"]:
        files = sorted((out / server["name"]).iterdir(), key=lambda p: int(p.stem))
        texts[server["name"]] = [f.read_text() for f in files]
        reads[server["name"]] = [(int(f.stem), parse_read(t))
                                 for f, t in zip(files, texts[server["name"]], strict=True)]
    lines = (out / "sacct.txt").read_text().splitlines()
    fields = lines[0].split("|")
    sacct = [dict(zip(fields, line.split("|"), strict=True)) for line in lines[1:]]
    return Sim(out, summary, manifest, json.loads((out / "truth.json").read_text()), reads,
               texts, sacct)


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Sim:
    out = tmp_path_factory.mktemp("sim") / "out"
    return load(out, simulate(out, **PARAMS))


def ideal_deltas(sim: Sim) -> dict[tuple[str, str, str], list[int]]:
    """What a collector reading every file computes per (server, target, printed id): deltas
    between consecutive reads, from zero for new ids and after resets (start_time changed, a
    counter went down, or a reset the truth lists as invisible in the files)."""
    hidden: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for h in sim.truth["resets_without_absence"]:
        hidden[(h["server"], h["target"], h["raw_id"])].append(h["recreated"])
    out: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for server, reads in sim.reads.items():
        prev: dict[tuple[str, str], Counters] = {}
        prev_t = 0
        for t, cur in reads:
            for key, c in cur.items():
                old = prev.get(key)
                reset = (old is None or c.start != old.start or c.rb < old.rb or c.wb < old.wb
                         or c.md < old.md
                         or any(prev_t < r <= t for r in hidden[(server, *key)]))
                base = (0, 0, 0) if reset or old is None else (old.rb, old.wb, old.md)
                acc = out[(server, *key)]
                for i, v in enumerate((c.rb, c.wb, c.md)):
                    acc[i] += v - base[i]
            prev, prev_t = cur, t
    return out


# --- determinism and layout -----------------------------------------------------------------

def tree(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file()}


def test_same_seed_gives_byte_identical_files_even_in_another_process(tmp_path: Path) -> None:
    simulate(tmp_path / "a", **SMALL)
    code = ("import json, sys; from pathlib import Path; from slurm_io.simulate import simulate;"
            " simulate(Path(sys.argv[1]), **json.loads(sys.argv[2]))")
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "b"), json.dumps(SMALL)],
                   env=env, check=True)
    simulate(tmp_path / "c", **{**SMALL, "seed": 4})
    a, b, c = tree(tmp_path / "a"), tree(tmp_path / "b"), tree(tmp_path / "c")
    assert len(a) > 10
    assert a == b
    assert a["sacct.txt"] != c["sacct.txt"]


def test_the_oracle_adds_a_file_and_changes_nothing_else(tmp_path: Path) -> None:
    # the accuracy breakdown's oracle: every `:uid:host` increment with its true job; the
    # files the collector reads and the truth stay byte-identical with or without it
    simulate(tmp_path / "a", **SMALL)
    simulate(tmp_path / "b", **SMALL, oracle=True)
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert b.pop("oracle.jsonl") and a == b
    truth = json.loads(a["truth.json"])["jobs"]
    by_job: dict[int, int] = defaultdict(int)
    # the model oracle's rows: each job phase's span and rates (bench/accuracy_model.py)
    phases: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for line in (tmp_path / "b" / "oracle.jsonl").read_text().splitlines():
        row = json.loads(line)
        if isinstance(row, list):
            _t, _target, node, uid, job, rb, wb, _md, _phase = row
            assert node in truth[str(job)]["nodes"] and uid == truth[str(job)]["uid"]
            by_job[job] += rb + wb
        elif "model_phase" in row:
            phases[(row["job"], row["node"])].append(row)
    assert by_job
    for line in (tmp_path / "b" / "oracle.jsonl").read_text().splitlines():
        row = json.loads(line)
        if isinstance(row, list) and row[5] + row[6] > 0:  # a blind increment of bytes ...
            t, target, node, _uid, job = row[:5]
            assert any(p["t0"] - 1 <= t <= p["t1"] + 1 and target in p["osts"]
                       for p in phases[(job, node)]), row  # ... inside a phase on its OST
    # what each phase printed by its job's id: the model oracle's "data" forms read its span
    spans = {r["model_phase"]: (r["t0"], r["t1"]) for rows in phases.values() for r in rows}
    osts = {r["model_phase"]: set(r["osts"]) for rows in phases.values() for r in rows}
    printed = [json.loads(line) for line in (tmp_path / "b" / "oracle.jsonl").read_text()
               .splitlines() if line.startswith('{"phase"')]
    assert printed and any(r["ost_bytes"] > 0 for r in printed)
    for r in printed:
        t0, t1 = spans[r["phase"]]
        assert t0 - 1 <= r["first"] <= r["last"] <= t1 + 1, r
        # the OSTs it showed bytes on by its id: some of its own, none where it showed none
        assert set(r["osts"]) <= osts[r["phase"]] and bool(r["osts"]) == (r["ost_bytes"] > 0)
    for job, nbytes in by_job.items():
        t = truth[str(job)]
        missing = t["by_class"].get("job_missing", {})
        seen = missing.get("read_bytes", 0) + missing.get("write_bytes", 0)
        lost = t["lost_in_lustre"]["read_bytes"] + t["lost_in_lustre"]["write_bytes"]
        assert seen <= nbytes <= seen + lost  # generated = visible + lost in Lustre


def test_simulate_refuses_a_non_empty_output_directory(tmp_path: Path) -> None:
    (tmp_path / "stale.txt").write_text("x")
    with pytest.raises(FileExistsError):
        simulate(tmp_path, **SMALL)


def test_files_follow_the_from_layout(sim: Sim) -> None:
    servers = {s["name"]: s for s in sim.manifest["servers"]}
    top = {p.name for p in sim.out.iterdir()}
    assert top == set(servers) | {"sacct.txt", "truth.json", "manifest.json"}
    n_files = total_size = 0
    for name, server in servers.items():
        files = list((sim.out / name).iterdir())
        assert files and all(re.fullmatch(r"\d{10}\.txt", f.name) for f in files)
        times = sorted(int(f.stem) for f in files)
        assert all(t % 120 <= sim.manifest["max_jitter"] for t in times)
        prefix = "mdt" if name == "mds01" else "obdfilter"
        for text in sim.texts[name]:
            assert re.findall(r"^(\S+)\.job_stats=", text, re.M) == [
                f"{prefix}.{t}" for t in server["targets"]
            ]
        n_files += len(files)
    for p in sim.out.rglob("*"):
        total_size += p.stat().st_size if p.is_file() else 0
    assert sim.summary["files"] == n_files
    assert sim.summary["bytes"] == total_size
    assert sim.summary["entries"] == sum(len(r) for reads in sim.reads.values() for _, r in reads)
    assert sim.summary["jobs"] == len(sim.sacct)


def test_sacct_has_the_header_and_one_parsable_row_per_job(sim: Sim) -> None:
    assert (sim.out / "sacct.txt").read_text().splitlines()[0] == SACCT_HEADER
    nodes = set(sim.manifest["nodes"])
    raw_ids = [int(r["JobIDRaw"]) for r in sim.sacct]
    assert len(set(raw_ids)) == len(raw_ids)
    assert set(sim.truth["jobs"]) == {str(i) for i in raw_ids}
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
    for r in sim.sacct:
        assert re.fullmatch(r"COMPLETED|FAILED|TIMEOUT|RUNNING|CANCELLED by \d+", r["State"])
        assert re.fullmatch(r"\d+:\d+", r["ExitCode"])
        assert int(r["UID"]) >= 1000 and r["User"] and r["Account"]
        assert re.fullmatch(stamp, r["Submit"]) and re.fullmatch(rf"{stamp}|Unknown", r["End"])
        assert re.fullmatch(r"(\d+-)?\d\d:\d\d:\d\d", r["Elapsed"])
        if r["NodeList"] != "None assigned":
            expanded = expand_hostlist(r["NodeList"])
            assert len(expanded) == int(r["NNodes"]) and set(expanded) <= nodes
            assert expanded == sim.truth["jobs"][r["JobIDRaw"]]["nodes"]
    tasks = [r for r in sim.sacct if "_" in r["JobID"]]
    assert len(tasks) >= 2
    bases = {r["JobID"].split("_")[0] for r in tasks}
    assert any(r["JobIDRaw"] in bases for r in tasks)  # one task keeps the array's id
    assert any(r["JobIDRaw"] != r["JobID"].split("_")[0] for r in tasks)


def test_jobs_share_nodes_within_and_across_users(sim: Sim) -> None:
    started = [r for r in sim.sacct if r["NodeList"] != "None assigned"]
    same_uid = other_uid = False
    for i, a in enumerate(started):
        for b in started[i + 1 :]:
            overlap = a["Start"] < (b["End"] if b["End"] != "Unknown" else "9") and \
                b["Start"] < (a["End"] if a["End"] != "Unknown" else "9")
            shared = set(expand_hostlist(a["NodeList"])) & set(expand_hostlist(b["NodeList"]))
            if overlap and shared:
                same_uid |= a["UID"] == b["UID"]
                other_uid |= a["UID"] != b["UID"]
    assert same_uid and other_uid
    assert any(int(r["NNodes"]) > 1 and "[" in r["NodeList"] for r in started)


def test_every_release_and_id_form_appears(sim: Sim) -> None:
    releases = {s["name"]: s["release"] for s in sim.manifest["servers"]}
    assert set(releases.values()) == set(RELEASES)
    shapes = {
        "2.10": r"^  snapshot_time:   \d{10}$[\s\S]*unit:  reqs \}",
        "2.12": r"^  snapshot_time:   \d{10}$[\s\S]*unit:  reqs \}",
        "2.14": r"^  snapshot_time:   \d{10}$[\s\S]*unit: usecs, min:",
        "2.15.0": r"^snapshot_time   : \d{1,8}\.\d{9} secs\.nsecs$",
        "2.15.2": r'^- job_id: +"\d+\\x3A\d+\\x3Anode\d{3}"$',
        "2.16": r'^- job_id: +"\d+:\d+:node\d{3}"$[\s\S]*hist: \{ \d+[KM]: \d+',
        "2.17": r"^obdfilter\.\S+\.job_stats=\n(?!job_stats:)",
    }
    for server, release in releases.items():
        text = "".join(sim.texts[server])
        assert re.search(shapes[release], text, re.M), (server, release)
        kind = "MDT" if server == "mds01" else "OST"
        printed = re.findall(r"^ +(\w+): +\{ samples:", sim.texts[server][-1], re.M)
        names = counter_names(release, kind)
        assert printed[: len(names)] == list(names)
    classes = sim.truth["classes"]
    for label in ("exact", "fqdn", "job_only", "job_uid", "job_missing", "exe", "system",
                  "unrecoverable"):
        assert classes[label]["entries"] > 0, label
    ids = {decode(raw) for reads in sim.reads.values() for _, r in reads for _, raw in r}
    forms = {
        "exact": r"\d+:\d{4,}:node\d{3}",
        "fqdn": r"\d+:\d{4,}:node\d{3}\.cluster",
        "job missing": r":\d{4,}:node\d{3}(\.cluster)?",
        "job only": r"\d+:?",
        "job + uid": r"\d+:\d{4,}:?",
        "login %e.%u": r"(rsync|cp|tar|scp|python3|git)\.\d{4,}",
        "root on a compute node": r":0:node\d{3}(\.cluster)?",
        "root on a login node": r"lfs\.0",
        "first char overwritten": r":\d+:\d{4,}:node\d{3}(\.cluster)?",
    }
    for form, pattern in forms.items():
        assert any(re.fullmatch(pattern, i) for i in ids), form


# --- truth ---------------------------------------------------------------------------------

def test_truth_totals_add_up_to_the_generated_increments(sim: Sim) -> None:
    totals = sim.truth["totals"]
    owners = [*sim.truth["jobs"].values(), *sim.truth["outside_jobs"].values()]
    for m in METRICS:
        generated = totals["generated"][m]
        lost = totals["lost_in_lustre"][m]
        assert generated > 0
        assert sum(o[m] + o["lost_in_lustre"][m] for o in owners) == generated
        assert sum(c[m] for c in sim.truth["classes"].values()) == generated
        assert sum(c["lost_in_lustre"][m] for c in sim.truth["classes"].values()) == lost
        assert totals["visible"][m] == generated - lost
        assert totals["unread_at_end"][m] == 0
        for o in owners:
            assert sum(c[m] for c in o["by_class"].values()) == o[m]


def test_an_ideal_collector_recovers_exactly_the_visible_truth(sim: Sim) -> None:
    deltas = ideal_deltas(sim)
    visible = sim.truth["totals"]["visible"]
    for i, m in enumerate(METRICS):
        assert sum(d[i] for d in deltas.values()) == visible[m]


def test_exact_ids_carry_exactly_each_jobs_exact_share(sim: Sim) -> None:
    per_id: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for (_, _, raw), values in ideal_deltas(sim).items():
        for i, v in enumerate(values):
            per_id[decode(raw)][i] += v
    checked = 0
    for raw_id, job in sim.truth["jobs"].items():
        exact = job["by_class"].get("exact", dict.fromkeys(METRICS, 0))
        got = [0, 0, 0]
        for node in job["nodes"]:
            for i, v in enumerate(per_id.get(f"{raw_id}:{job['uid']}:{node}", [0, 0, 0])):
                got[i] += v
        lost = job["lost_in_lustre"]
        if not any(lost.values()):  # lost I/O is booked per class, not per id
            assert got == [exact[m] for m in METRICS], raw_id
            checked += any(got)
    assert checked >= 5


def test_io_is_lost_in_lustre_only_by_jobs_running_during_an_outage(sim: Sim) -> None:
    outages = sim.manifest["outages"]
    lossy = [j for j in sim.truth["jobs"].values() if any(j["lost_in_lustre"].values())]
    for job in lossy:
        end = job["end"] if job["end"] is not None else float("inf")
        assert any(job["start"] <= o["to"] and end >= o["from"] for o in outages)


def test_without_an_outage_nothing_is_lost_and_reads_are_regular(tmp_path: Path) -> None:
    summary = simulate(tmp_path / "o", **{**SMALL, "outage": False})
    small = load(tmp_path / "o", summary)
    assert small.manifest["outages"] == []
    assert not any(small.truth["totals"]["lost_in_lustre"].values())
    for reads in small.reads.values():
        times = [t for t, _ in reads]
        assert all(b - a <= 120 + small.manifest["max_jitter"] for a, b in pairwise(times))


# --- Lustre behaviour in the files -----------------------------------------------------------

def test_an_outage_leaves_a_gap_without_files(sim: Sim) -> None:
    outages = sim.manifest["outages"]
    assert outages
    all_servers = {s["name"] for s in sim.manifest["servers"]}
    assert any(set(o["servers"]) == all_servers for o in outages)
    for o in outages:
        for server, reads in sim.reads.items():
            inside = [t for t, _ in reads if o["from"] + 10 < t < o["to"] - 10]
            if server in o["servers"]:
                assert inside == []
                times = [t for t, _ in reads]
                assert any(b - a >= 15 * 60 for a, b in pairwise(times))
            else:
                assert inside


def test_entries_freed_after_idle_gaps_reappear_with_lower_counters(sim: Sim) -> None:
    found = 0
    for reads in sim.reads.values():
        last: dict[tuple[str, str], tuple[int, Counters]] = {}
        for i, (_, cur) in enumerate(reads):
            for key, c in cur.items():
                seen = last.get(key)
                if seen is not None and seen[0] < i - 1 and c.requests < seen[1].requests:
                    found += 1
                    if c.start is not None:  # re-created: it started after its last update
                        assert float(c.start) > float(seen[1].start or 0)
                last[key] = (i, c)
    assert found >= 3


def test_idle_entries_are_freed_within_one_and_a_half_cleanup_intervals(sim: Sim) -> None:
    boots = {s["name"]: (s["boot_time"] if s["release"] == "2.15.0" else 0.0)
             for s in sim.manifest["servers"]}
    for server, reads in sim.reads.items():
        for t, cur in reads:
            for c in cur.values():
                idle = t - (c.snapshot + boots[server])
                assert -1.0 <= idle <= 900.0
