"""The hook's spool: one JSON file per job end, `<spool_dir>/<jobid>.json`.

The hook writes the file first (fsync'ed, renamed into place, directory fsync'ed), so the
job end is durable before anything that can hang or fail (importing psycopg, the database)
is tried. Whoever then records the job and its queue row in PostgreSQL -- the hook's
background child, or the reporter at its next pass -- removes the file. Ingesting is
idempotent (an upsert and `ON CONFLICT DO NOTHING`), so two ingesters racing over a file,
or a crash between commit and unlink, cost nothing but a repeated upsert.

Only the standard library is imported at module level: the hook imports this before it
forks, inside its 200 ms budget. Ingesting imports psycopg and the job store lazily.

A stored record is not removed but moved to `kept/` (a rename: free) and kept for the replay
window (`[report] replay_window`, pruned by the reporter); `kept/.newest` names the last one
kept. A database restored from a backup lacks the jobs hooked since the backup: the
reporter's `recover` sees that the newest kept job has no queue row and puts back into the
spool every kept record whose job the database lacks (docs/hook.md "Restores").

Files: `<job>.json` (pending), `.<job>.json.<pid>.tmp` (being written), `<job>.json.bad` (not
a storable hook record: kept for an admin, with its reason in the `problem` table, reported by
`report-daemon --status` and `jobio problems`),
`.drain.lock` (flock: one ingester at a time; the others leave their file to it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from typing import Any, NamedTuple

from slurm_io.fsutil import durable_replace

SUFFIX = ".json"
BAD_SUFFIX = ".bad"
LOCK_NAME = ".drain.lock"
KEPT = "kept"  # stored records, kept for the replay window
NEWEST = ".newest"  # in kept/: the name of the record kept last
FORMAT_VERSION = 1
MAX_TIME = 253402300799.0  # 9999-12-31: what timestamptz and datetime hold


def _logger() -> Any:
    import logging  # not at import time: the hook's budget

    return logging.getLogger(__name__)



def write_request(spool_dir: str, job: int, env: dict[str, str], *, hook_time: float,
                  host: str) -> str:
    """Write job `job`'s hook record durably and atomically; the file's path.

    A second hook run for the same job (a requeued job ends again) replaces the file: the
    job has one queue row anyway, and the newer environment is the better one.
    """
    os.makedirs(spool_dir, mode=0o770, exist_ok=True)
    path = os.path.join(spool_dir, f"{job}{SUFFIX}")
    data = json.dumps({"version": FORMAT_VERSION, "job": job, "hook_time": hook_time,
                       "host": host, "env": env}, sort_keys=True).encode()
    with durable_replace(path, 0o640) as out:
        out.write(data)
    return path


def pending(spool_dir: str) -> list[str]:
    """Paths of the spooled hook records, in job order (names `<ASCII digits>.json`)."""
    try:
        names = os.listdir(spool_dir)
    except FileNotFoundError:
        return []
    stems = [n[: -len(SUFFIX)] for n in names if n.endswith(SUFFIX)]
    # isascii: str.isdigit() also takes `²`, which int() refuses, and other scripts' digits
    jobs = sorted((int(s), s) for s in stems if s.isascii() and s.isdigit())
    return [os.path.join(spool_dir, f"{s}{SUFFIX}") for _, s in jobs]


def bad_files(spool_dir: str) -> list[str]:
    try:
        return sorted(os.path.join(spool_dir, n) for n in os.listdir(spool_dir)
                      if n.endswith(SUFFIX + BAD_SUFFIX))
    except FileNotFoundError:
        return []


@contextlib.contextmanager
def drain_lock(spool_dir: str, *, wait: bool = False) -> Any:
    """Yield True while holding the spool's drain lock, False when another process holds it
    (and `wait` is False). The kernel releases it when its holder dies."""
    try:
        fd = os.open(os.path.join(spool_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o660)
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


class IngestResult(NamedTuple):
    ingested: list[int]
    bad: list[str]


class BadRecord(ValueError):
    """A spool file that is not a hook record (kept aside as `.bad`)."""


def load_request(path: str) -> dict[str, Any]:
    """A spool file's content, checked; BadRecord when it is not a hook record."""
    try:
        with open(path, "rb") as f:
            data = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise BadRecord(f"not JSON: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("env"), dict):
        raise BadRecord("no `env` object")
    env = data["env"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise BadRecord("`env` holds non-string values")
    hook_time = data.get("hook_time")
    if isinstance(hook_time, bool) or not isinstance(hook_time, int | float):
        raise BadRecord("no `hook_time`")
    try:
        if not 0 <= float(hook_time) <= MAX_TIME:
            raise ValueError
    except (OverflowError, ValueError):  # NaN and Infinity are JSON to Python
        raise BadRecord(f"`hook_time` {hook_time!r} out of range") from None
    return data


def record_of(env: dict[str, str]) -> Any:
    """The JobRecord of a hook environment. A node list python-hostlist cannot read is
    dropped (sacct's record brings the nodes); a value that cannot be stored (no job id, an
    id or uid out of range, see slurm_io.jobs.fields) is a BadRecord."""
    from slurm_io.jobs.hookenv import record_from_hook_env
    from slurm_io.slurm.nodes import NodeListError

    try:
        try:
            return record_from_hook_env(env)
        except NodeListError:
            _logger().warning("job %r: unreadable SLURM_JOB_NODELIST %r: nodes left to sacct",
                              env.get("SLURM_JOB_ID"), env.get("SLURM_JOB_NODELIST"))
            return record_from_hook_env({k: v for k, v in env.items()
                                         if k != "SLURM_JOB_NODELIST"})
    except ValueError as e:
        raise BadRecord(str(e)) from e


def store_request(conn: Any, env: dict[str, str], hook_time: float, *,
                  source: str) -> int:
    """Record the job of a hook environment and queue its report, in one transaction.
    BadRecord when the environment is no storable job record."""
    from slurm_io.jobs.store import job_key, upsert_jobs
    from slurm_io.notify import queue

    record = record_of(env)
    with conn.transaction():
        upsert_jobs(conn, [record])
        key = job_key(conn, record)  # the run's row (cluster, raw id, run: sql/0020)
        if key is None:
            raise BadRecord(f"job {record.job}: no row after storing it")
        queue.enqueue(conn, key, queued_at=hook_time, source=source)
    return int(record.job)  # the raw id, as the hook's logs and spool files name the job


def quarantine(conn: Any, path: str | None, reason: str, *, record: bytes | str | None = None,
               source: str = "hook-spool") -> None:
    """Keep a hook record that cannot be stored where an admin sees it: a `problem` row
    (`jobio problems`) with the reason and the file's bytes, and the file renamed `.bad`.

    The row is committed before the rename: when the database fails here the file stays
    pending and the next pass tries again.
    """
    from slurm_io.store import problems

    if record is None and path is not None:
        with contextlib.suppress(OSError), open(path, "rb") as f:
            record = f.read(problems.MAX_RECORD_BYTES)
    _logger().error("%s: hook record not stored (%s): kept as %s%s and in `jobio problems`",
                    path or "job environment", reason, path or "-", BAD_SUFFIX if path else "")
    with conn.transaction():
        problems.record(conn, [problems.Problem(
            source, reason, origin=None if path is None else os.path.basename(path),
            record=record, lost="the job's hook record (sacct's record may still come)")])
    if path is not None:
        with contextlib.suppress(OSError):
            os.rename(path, path + BAD_SUFFIX)


def unstorable(error: BaseException) -> bool:
    """Whether `error`, raised while storing one hook record, is about that record (so it
    is quarantined and the next one is processed) rather than about the database being
    unavailable (then everything stays in the spool for the next try)."""
    from slurm_io.store.errors import about_the_record

    return about_the_record(error)


def ingest(conn: Any, spool_dir: str, *, source: str = "spool") -> IngestResult:
    """Store every spooled hook record and remove its file; one bad file never blocks the
    next. A file that cannot be stored (not a hook record, a value the database cannot
    hold) is quarantined: a `problem` row with the reason, the file renamed `.bad`. An
    unavailable database propagates (the files stay for the next try)."""
    done: list[int] = []
    bad: list[str] = []
    for path in pending(spool_dir):
        try:
            data = load_request(path)
            job = store_request(conn, data["env"], float(data["hook_time"]), source=source)
        except FileNotFoundError:
            continue  # another ingester took it
        except BadRecord as e:
            quarantine(conn, path, str(e))
            bad.append(path)
            continue
        except Exception as e:
            if not unstorable(e):
                raise
            quarantine(conn, path, f"cannot be stored: {type(e).__name__}: "
                       f"{str(e).splitlines()[0] if str(e) else ''}")
            bad.append(path)
            continue
        keep(spool_dir, path)
        done.append(job)
    return IngestResult(done, bad)


def keep(spool_dir: str, path: str) -> None:
    """Move a stored record to kept/ (a rename) and name it the newest; a failure only costs
    the second copy, and the record leaves the spool either way."""
    name = os.path.basename(path)
    try:
        kept = kept_dir(spool_dir)
        os.replace(path, os.path.join(kept, name))
        tmp = os.path.join(kept, f"{NEWEST}.{os.getpid()}.tmp")
        with open(tmp, "w") as f:
            f.write(name)
        os.replace(tmp, os.path.join(kept, NEWEST))
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def kept_dir(spool_dir: str) -> str:
    """`<spool_dir>/kept`, created with the spool directory's own mode (2770 in docs/hook.md:
    the hook's SlurmUser and the reporter's account both write there, whatever umask the
    first of them runs with)."""
    kept = os.path.join(spool_dir, KEPT)
    if not os.path.isdir(kept):
        os.makedirs(kept, mode=0o770, exist_ok=True)
        with contextlib.suppress(OSError):
            os.chmod(kept, os.stat(spool_dir).st_mode & 0o7777)
    return kept


def kept_records(spool_dir: str) -> list[str]:
    """Paths of the kept records, in job order."""
    return pending(os.path.join(spool_dir, KEPT))


def prune_kept(spool_dir: str, window: float, now: float) -> int:
    """Remove kept records stored longer than `window` seconds ago; how many."""
    removed = 0
    for path in kept_records(spool_dir):
        with contextlib.suppress(FileNotFoundError):
            if now - os.stat(path).st_mtime > window:
                os.unlink(path)
                removed += 1
    return removed


def recover(conn: Any, spool_dir: str) -> list[int]:
    """Put back into the spool the kept records of jobs the database lacks (a restore from a
    backup); the raw job ids put back. Cheap when nothing is lacking: the newest kept job is
    looked up, and only when the database lacks it are all kept records."""
    kept = os.path.join(spool_dir, KEPT)
    try:
        with open(os.path.join(kept, NEWEST)) as f:
            newest = os.path.join(kept, f.read().strip())
    except OSError:
        return []
    if not _lacks(conn, newest):
        return []
    again = []
    for path in kept_records(spool_dir):
        target = os.path.join(spool_dir, os.path.basename(path))
        if os.path.exists(target) or not _lacks(conn, path):
            continue
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue
        # a copy, not a hard link: renaming a link onto its twin does nothing (rename(2))
        with durable_replace(target, 0o640) as out:
            out.write(data)
        again.append(int(os.path.basename(path)[: -len(SUFFIX)]))
    return again


def _lacks(conn: Any, path: str) -> bool:
    """Whether the database has no queue row for the job of kept record `path`."""
    from slurm_io.jobs.store import job_key
    from slurm_io.store import recovery

    try:
        record = record_of(load_request(path)["env"])
    except (OSError, BadRecord):
        return False  # gone, or nothing that could be stored anyway
    with conn.transaction():
        key = job_key(conn, record)
        return key is None or not recovery.queued(conn, key)
