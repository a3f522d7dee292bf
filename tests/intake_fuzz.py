"""Byte-level mutations of real-format Slurm records, shared by the fuzz tests
(tests/jobs/test_intake_fuzz.py, hypothesis) and the long run (bench/fuzz_intake.py).

The samples are written here in the forms Slurm 22.05 and 24.11 print (sacct -P with and
without -X, `-p` with its trailing bar, het components `9+0|9`, array tasks `5_1|13`, the
pending rest of an array, a non-ASCII name, a `|` in a name, a newline in a submit line;
the EpilogSlurmctld environments of a plain job, an array task and a het component). A
mutation works on bytes, as a user's `sbatch -J` or a damaged file can: flip, insert, delete,
duplicate, truncate, and splice in tokens that matter to the parsers (bars, newlines, NUL,
invalid UTF-8, other scripts' digits, placeholders, huge numbers).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping

from slurm_io.jobs import fields
from slurm_io.model import JobRecord

SACCT_SAMPLES: tuple[str, ...] = (
    # sacct -a -X -P --format=<SACCT_FIELDS> (what `jobio jobs sync` runs)
    "JobID|JobIDRaw|JobName|User|UID|Account|Partition|State|ExitCode|Submit|Start|End|"
    "NNodes|NodeList|WorkDir|SubmitLine\n"
    "1|1|io_ok|alice|1000|research|debug|COMPLETED|0:0|2026-11-23T16:32:02|"
    "2026-11-23T16:32:03|2026-11-23T16:32:11|1|node01|/var/lib/jobs/alice|sbatch io.sbatch\n"
    "4|4|tobecancelled|bob|1001|research|debug|CANCELLED by 1001|0:0|2026-11-23T16:32:02|"
    "2026-11-23T16:32:03|2026-11-23T16:32:05|1|node03|/var/lib/jobs/bob|sbatch long.sbatch\n"
    "9+0|9|het|alice|1000|research|debug|COMPLETED|0:0|2026-11-23T16:32:02|"
    "2026-11-23T16:32:26|2026-11-23T16:32:30|1|node01|/var/lib/jobs/alice|"
    "sbatch -J het -N1 -n1 : -N2 -n2 het.sbatch\n"
    "9+1|10|het|alice|1000|research|debug|COMPLETED|0:0|2026-11-23T16:32:02|"
    "2026-11-23T16:32:26|2026-11-23T16:32:30|2|node[02-03]|/var/lib/jobs/alice|"
    "sbatch -J het -N1 -n1 : -N2 -n2 het.sbatch\n"
    "11|11|résumé-ü-日本|alice|1000|research|debug|COMPLETED|0:0|2026-11-23T16:32:02|"
    "2026-11-23T16:32:26|2026-11-23T16:32:28|1|node04|/var/lib/jobs/alice|"
    "sbatch -J résumé-ü-日本 --wrap echo \"$SLURM_JOB_NAME\"; sleep 1\n"
    "5_1|13|arr|bob|1001|research|debug|COMPLETED|0:0|2026-11-23T16:32:02|"
    "2026-11-23T16:32:03|2026-11-23T16:32:05|1|node04|/var/lib/jobs/bob|sbatch array.sbatch\n"
    "5_[2-9%2]|5|arr|bob|1001|research|debug|PENDING|0:0|2026-11-23T16:32:02|Unknown|"
    "Unknown|1|None assigned|/var/lib/jobs/bob|sbatch array.sbatch\n"
    "7|7|io|test|alice|1000|(null)|debug|FAILED|3:0|2026-11-23T16:32:02|2026-11-23T16:32:03|"
    "2026-11-23T16:32:05|1|node02|/var/lib/jobs/alice|sbatch --wrap echo a | cat\necho b\n",
    # without -X: steps, the allocation of job 3 filtered out
    "JobID|JobIDRaw|JobName|User|UID|State|ExitCode|Start|End|NNodes|NodeList\n"
    "2|2|multi|alice|1000|COMPLETED|0:0|2026-11-23T16:32:03|2026-11-23T16:32:09|3|"
    "node[01-03]\n"
    "2.batch|2.batch|batch|||COMPLETED|0:0|2026-11-23T16:32:03|2026-11-23T16:32:09|1|node01\n"
    "2.0|2.0|hostname|||COMPLETED|0:0|2026-11-23T16:32:04|2026-11-23T16:32:05|3|node[01-03]\n"
    "3.batch|3.batch|batch|||FAILED|3:0|2026-11-23T16:32:03|2026-11-23T16:32:05|1|node02\n"
    "3.extern|3.extern|extern|||COMPLETED|0:0|2026-11-23T16:32:03|2026-11-23T16:32:05|1|"
    "node02\n",
    # sacct -p (trailing bar), SLURM_TIME_FORMAT=%s, 24.11's id forms
    "JobID|JobIDRaw|JobName|State|Start|End|NodeList|\n"
    "9+1|10|het|COMPLETED|1795451546|1795451550|node[02-03]|\n"
    "5_3|5|arr|COMPLETED|1795451525|1795451528|node02|\n"
    "6|6|pend_cancel|CANCELLED by 1001|None|None|None assigned|\n",
)

# EpilogSlurmctld environments (layouts of fixtures/slurm/22.05 and 24.11 dumps)
_BASE_ENV = {
    "SLURM_CLUSTER_NAME": "lab", "SLURM_JOB_ACCOUNT": "research",
    "SLURM_JOB_CPUS_PER_NODE": "1(x2)", "SLURM_JOB_DERIVED_EC": "0",
    "SLURM_JOB_EXIT_CODE2": "0:0", "SLURM_JOB_EXIT_CODE": "0", "SLURM_JOB_GID": "1000",
    "SLURM_JOB_GROUP": "alice", "SLURM_JOB_NAME": "het", "SLURM_JOB_NODELIST": "node[02-03]",
    "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_PARTITION": "debug", "SLURM_JOB_UID": "1000",
    "SLURM_JOB_USER": "alice", "SLURM_JOB_WORK_DIR": "/var/lib/jobs/alice",
    "SLURM_SCRIPT_CONTEXT": "epilog_slurmctld",
}
ENV_SAMPLES: tuple[Mapping[str, str], ...] = (
    {**_BASE_ENV, "SLURM_JOB_ID": "2", "SLURM_JOBID": "2", "SLURM_JOB_NAME": "multi"},
    {**_BASE_ENV, "SLURM_JOB_ID": "10", "SLURM_JOBID": "10", "SLURM_HET_JOB_ID": "9",
     "SLURM_HET_JOB_OFFSET": "1", "SLURM_PACK_JOB_ID": "9", "SLURM_PACK_JOB_OFFSET": "1",
     "SLURM_JOB_START_TIME": "1795451546", "SLURM_JOB_END_TIME": "1795451550"},
    {**_BASE_ENV, "SLURM_JOB_ID": "13", "SLURM_JOBID": "13", "SLURM_ARRAY_JOB_ID": "5",
     "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_JOB_NAME": "arr",
     "SLURM_JOB_NODELIST": "node04", "SLURM_JOB_EXIT_CODE2": "3:0", "SLURM_JOB_EXIT_CODE": "768"},
    {**_BASE_ENV, "SLURM_JOB_ID": "11", "SLURM_JOBID": "11", "SLURM_JOB_NAME": "résumé-ü-日本"},
)

TOKENS: tuple[bytes, ...] = (
    b"|", b"\n", b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf0\x9f", "²".encode(),
    "٣".encode(), "\u2028".encode(), b"\x85", b"\x1c", b"\r", b"(null)", b"None assigned",
    b"Unknown", b"None", b"", b" ", b"+", b"_", b".", b"[", b"]", b"-", b",", b"%", b"0",
    b"99999999999999999999", b"4294967296", b"2147483648", b"9223372036854775808",
    b"9999-12-31T23:59:59", b"0001-01-01T00:00:00", b"10000-01-01T00:00:00", b"nan",
    b"node[1-99999999]", b"CANCELLED by 1001", b"\\x41", b"\"", b"{", b"}", b"\\u0000",
    b"\\udcff", b"1e999", b"NaN", b"-1",
)


def mutate(data: bytes, rnd: random.Random, ops: int | None = None) -> bytes:
    """`data` with 1-4 random byte-level mutations (or `ops` of them)."""
    buf = bytearray(data)
    for _ in range(ops if ops is not None else rnd.randint(1, 4)):
        kind = rnd.randrange(7)
        pos = rnd.randint(0, len(buf))
        if kind == 0 and buf:  # flip one byte
            buf[min(pos, len(buf) - 1)] = rnd.randrange(256)
        elif kind in (1, 2):  # splice in a token
            buf[pos:pos] = rnd.choice(TOKENS)
        elif kind == 3:  # delete a span
            del buf[pos:pos + rnd.randint(1, 12)]
        elif kind == 4:  # duplicate a span
            end = min(len(buf), pos + rnd.randint(1, 80))
            buf[end:end] = buf[pos:end]
        elif kind == 5:  # replace a span with a token
            buf[pos:pos + rnd.randint(1, 6)] = rnd.choice(TOKENS)
        elif kind == 6 and rnd.random() < 0.2:  # truncate
            del buf[pos:]
    return bytes(buf)


def mutated_sacct(rnd: random.Random) -> str:
    """A mutated sample, decoded as the importer decodes a file (surrogateescape)."""
    data = mutate(rnd.choice(SACCT_SAMPLES).encode(), rnd)
    return data.decode("utf-8", "surrogateescape")


def mutated_env(rnd: random.Random) -> dict[str, str]:
    """A sample environment with 1-3 values mutated as bytes and decoded like os.environ
    (surrogateescape), sometimes a variable dropped or a value swapped for a token."""
    env = dict(rnd.choice(ENV_SAMPLES))
    keys = sorted(env)
    for _ in range(rnd.randint(1, 3)):
        key = rnd.choice(keys)
        roll = rnd.random()
        if roll < 0.1:
            env.pop(key, None)
        elif roll < 0.3:
            env[key] = rnd.choice(TOKENS).decode("utf-8", "surrogateescape")
        else:
            value = env.get(key, "").encode("utf-8", "surrogateescape")
            env[key] = mutate(value, rnd).decode("utf-8", "surrogateescape")
    return env


def spool_file_bytes(rnd: random.Random, hook_time: float) -> bytes:
    """A hook spool file: what the hook writes for a mutated environment, or that JSON
    itself damaged at the byte level."""
    env = mutated_env(rnd)
    data = json.dumps({"version": 1, "job": 1, "hook_time": hook_time, "host": "ctld",
                       "env": env}, sort_keys=True).encode()
    return mutate(data, rnd) if rnd.random() < 0.3 else data


def _storable_text(value: str | None) -> bool:
    if value is None:
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


def _storable_time(value: float | None) -> bool:
    return value is None or (math.isfinite(value)
                             and fields.TIME_MIN <= value <= fields.TIME_MAX)


def unstorable(rec: JobRecord) -> list[str]:
    """The fields of `rec` that PostgreSQL would refuse (empty: the record is storable)."""
    bad = []
    if not 1 <= rec.job <= fields.JOB_ID_MAX:
        bad.append("job")
    if rec.array_job is not None and not 1 <= rec.array_job <= fields.JOB_ID_MAX:
        bad.append("array_job")
    if rec.uid is not None and not 0 <= rec.uid <= fields.UID_COLUMN_MAX:
        bad.append("uid")
    for name in ("jobid", "array_task", "user", "account", "partition", "name", "state",
                 "exit_code", "work_dir", "submit_line", "source"):
        if not _storable_text(getattr(rec, name)):
            bad.append(name)
    if not all(_storable_text(n) for n in rec.nodes):
        bad.append("nodes")
    for name in ("submit", "start", "end"):
        if not _storable_time(getattr(rec, name)):
            bad.append(name)
    return bad
