"""Job ids with any bytes a user can put there (Lustre before 2.15.2 prints them raw).

A process sets its own job id (`SLURM_JOB_ID`, or its name for `%e`), so an id can hold
bytes that are not UTF-8 (ED A0 80: a surrogate, which Python's `surrogatepass` used to
let through) or a NUL. PostgreSQL's text takes neither; such an id used to stop a server's
collector on every start, or block its spool for ever.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from slurm_io.model import Batch, ByteStats, Delta, IdClass, JobId
from slurm_io.parse.jobstats import Parser, parse
from slurm_io.repair.jobid import JobIdGrammar
from slurm_io.store.spool import Spool
from slurm_io.text import clean, needs_cleaning

START = 1_795_000_000.0
JOBIO = Path(sys.executable).with_name("jobio")
ODD = [b"\xed\xa0\x80.1000", b"77:1000:cn\x00x", b"\xff\xfe:1000:cn02", b"caf\xc3\xa9.1000",
       b"\x00", b"88:1000:cn\xed\xa0\x80"]
PLAIN = [b"4242:1000:cn01", b"rsync.1001"]


def read(t: float, k: int, ids: list[bytes]) -> bytes:
    """One OST read in the 2.12 layout (ids printed raw), entry counters growing with k."""
    out = [b"obdfilter.fs-OST0000.job_stats=\njob_stats:\n"]
    for i, jid in enumerate(ids):
        n = (k + 1) * (i + 1)
        out.append(
            b"- job_id:          " + jid + b"\n"
            + f"  snapshot_time:   {int(t) - i}\n".encode()
            + f"  read_bytes:      {{ samples: {n:11d}, unit: bytes, min:    4096, max:    4096,"
              f" sum: {n * 4096:15d} }}\n".encode()
            + b"  write_bytes:     { samples:           0, unit: bytes, min:       0, max:"
              b"       0, sum:               0 }\n"
            + f"  open:            {{ samples: {n:11d}, unit:  reqs }}\n".encode())
    return b"".join(out)


def test_parsed_ids_are_storable_text_whatever_bytes_they_hold():
    r = parse(read(START, 0, PLAIN + ODD))
    entries = r.targets["fs-OST0000"]
    assert len(entries) == len(PLAIN + ODD) and not r.problems
    for e, raw in zip(entries, PLAIN + ODD, strict=True):
        assert e.raw_id == clean(raw)
        assert not needs_cleaning(e.raw_id) and not needs_cleaning(e.job_id)
        e.raw_id.encode("utf-8")  # strict: no surrogate left
    by_raw = {e.raw_id: e for e in entries}
    assert "\\xed\\xa0\\x80.1000" in by_raw and "77:1000:cn\\x00x" in by_raw
    assert "café.1000" in by_raw  # valid UTF-8 is kept as it is


def test_quoted_escapes_are_bytes_read_as_utf8():
    text = (b'obdfilter.fs-OST0000.job_stats=\njob_stats:\n- job_id: "caf\\xC3\\xA9.1000"\n'
            b"  snapshot_time: 1700000000\n  open: { samples: 1, unit: reqs }\n"
            b'- job_id: "77\\x3A1000\\x3Acn\\x00x"\n'
            b"  snapshot_time: 1700000000\n  open: { samples: 1, unit: reqs }\n")
    a, b = parse(text).targets["fs-OST0000"]
    assert a.job_id == "café.1000" and b.job_id == "77:1000:cn\\x00x"


def test_cleaning_keeps_the_class_an_id_had_as_bytes():
    g = JobIdGrammar()
    for raw in ODD:
        carried = raw.decode("utf-8", "surrogateescape")
        assert g.classify(clean(raw)).id_class == g.classify(carried).id_class, raw


def test_fast_path_leaves_nul_to_the_robust_path_and_both_agree(monkeypatch):
    text = read(START, 0, [*PLAIN, b"77:1000:cn\x00x"])
    fast = parse(text)
    monkeypatch.setattr(Parser, "_fast", lambda self, chunk, *a: False)
    assert parse(text).targets == fast.targets


def replay_cli(dsn: str, state: Path, folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(JOBIO), "--dsn", dsn, "--state-dir", str(state), "collect",
                           "--from", str(folder)], capture_output=True, text=True, timeout=300)


def test_a_server_whose_users_set_odd_ids_is_stored_in_full(db_dsn, tmp_path):
    folder = tmp_path / "reads"
    for server, ids in (("oss01", PLAIN + ODD), ("oss02", PLAIN)):
        (folder / server).mkdir(parents=True)
        for k in range(4):
            t = START + 120 * k
            (folder / server / f"{t:.0f}.txt").write_bytes(
                read(t, k, ids).replace(b"fs-OST0000", b"fs-OST000" + server[-1:].encode()))
    r = replay_cli(db_dsn, tmp_path / "state", folder)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "spool_depth=0" in r.stdout
    with psycopg.connect(db_dsn) as conn:
        rows = conn.execute(
            "SELECT t.name, d.raw_id, d.read_bytes, d.op_open FROM jobstats_delta d"
            " JOIN fs_target t USING (target_id)").fetchall()
    stored = {(t, raw) for t, raw, _, _ in rows}
    # every id of every read after the baseline: 3 intervals each
    assert len(rows) == 3 * (len(PLAIN + ODD) + len(PLAIN))
    for raw in ODD:
        assert ("fs-OST0001", clean(raw)) in stored
    for t, raw, rb, op in rows:
        i = [clean(x) for x in (PLAIN + ODD if t == "fs-OST0001" else PLAIN)].index(raw)
        assert rb == (i + 1) * 4096 and op == i + 1


def _batch(seq: int, raw: str, host: str | None, last: float | None) -> Batch:
    t1 = START + 120 * seq
    stats = ByteStats(1, 4096, 4096, 4096, None, None)
    good = (Delta("fs-OST0000", "1:1000:cn01", "1:1000:cn01", t1 - 120, t1, t1 - 5,
                  {"read_bytes": 1, "open": 2}, {"read_bytes": stats}, 0),
            JobId(IdClass.EXACT, 1, 1000, "cn01", None, False))
    odd = (Delta("fs-OST0000", raw, raw, t1 - 120, t1, last, {"open": 3}, {}, 0),
           JobId(IdClass.EXACT, 77, 1000, host, None, False))
    return Batch("oss01", seq, t1, ("fs-OST0000",), [good, odd], 2, 0, 0, 0)


@pytest.mark.parametrize("raw, host, last", [
    ("\ud800.1000", None, None),  # what the parser produced with surrogatepass
    ("77:1000:cn\x00x", "cn\x00x", None),  # a NUL in the id and in the host taken from it
    ("77:1000:cn03", "cn03", 1e300),  # a snapshot_time no timestamptz holds
])
def test_a_spooled_batch_the_database_refuses_blocks_nothing(raw, host, last, db_dsn,
                                                              tmp_path):
    spool = Spool(tmp_path / "spool")
    spool.put(_batch(1, raw, host, last))  # as spooled by the version before
    spool.put(_batch(2, "2:1000:cn01", "cn01", None))
    written, remaining = spool.flush(lambda: psycopg.connect(db_dsn),
                                     log=logging.getLogger("test"))
    assert (written, remaining) == (2, 0)
    with psycopg.connect(db_dsn) as conn:
        rows = conn.execute("SELECT raw_id, op_open FROM jobstats_delta ORDER BY ts_end, raw_id"
                            ).fetchall()
        refused = conn.execute("SELECT source, lost FROM problem").fetchall()
        seqs = conn.execute("SELECT seq, n_rows FROM ingest_batch ORDER BY seq").fetchall()
    good = [("1:1000:cn01", 2)]
    if last is None:  # the odd text is stored, cleaned
        assert rows == [*good, (clean(raw), 3), ("1:1000:cn01", 2), ("2:1000:cn01", 3)]
        assert refused == [] and seqs == [(1, 2), (2, 2)]
    else:  # the impossible row alone is refused, kept in the quarantine with what it lost
        assert rows == [*good, ("1:1000:cn01", 2), ("2:1000:cn01", 3)]
        assert len(refused) == 1 and refused[0][0] == "batch" and raw in refused[0][1]
        assert seqs == [(1, 1), (2, 2)]


def test_captured_reads_with_odd_names_give_storable_servers_and_possible_times(tmp_path):
    from slurm_io.collect.source import captured_reads

    server = tmp_path / "oss\udcff"  # the byte 0xff in the folder's name
    server.mkdir()
    for name in ("nan.txt", "1e30.txt", "inf.txt", "-5.txt", f"{START:.0f}.txt"):
        (server / name).write_bytes(read(START, 0, PLAIN))
    (r,) = captured_reads(tmp_path)
    assert r.server == "oss\\xff" and r.read_time == START
