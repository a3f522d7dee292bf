"""The job-end hook (EpilogSlurmctld): record the job, queue its report, exit 0 -- fast.

Run by epilog/jobio-epilog (`python -s -P -m slurm_io.notify.hook`, or this file by path
with -S from a checkout), as SlurmUser, with an environment of SLURM_* variables only (no
PATH), ~0.05 s after the job's end, possibly many at once. Budget: 200 ms, whatever is
broken (database, config, disk, Slurm). Hence:

1. Only the standard library is imported (~25 ms with the interpreter); psycopg alone
   would cost ~130 ms. The config file is read with tomllib alone (dsn, state_dir, [hook]).
2. The job's SLURM_* environment is written to the spool (`[hook] spool_dir`, fsync'ed,
   atomic rename): from here on the job end is durable.
3. A child is forked, detached (new session, stdio on /dev/null, so neither slurmscriptd's
   pipes nor its process-group kill reach it) and given a hard deadline (SIGALRM, `[hook]
   db_timeout`). It takes the spool's drain lock -- if another hook's child holds it, that
   one will pick this file up too, so a burst of job ends costs one psycopg import, not one
   per job -- and ingests every spooled record into PostgreSQL (job row via upsert_jobs,
   report_queue row), removing the files; then it lingers a second for the next job ends
   (a train of them costs one import and one connection). Anything it does not manage stays
   spooled and the reporter ingests it at its next pass.
4. The hook itself exits 0 right after the fork: it never waits for the database, never
   calls sacct, and catches everything, a broken config included.
5. Releases before 23.02 (22.05) put no start/end time in the environment: the child (not
   the hook) asks `scontrol show job -o` (`[slurm] scontrol`) while the job is still in
   slurmctld's memory, and stores the job with those times; sacct's final record comes
   later anyway (docs/hook.md, "Slurm releases").

The spool write failing (full disk, wrong permissions) is the one case where the record
lives only in the child's memory; it still tries the database, and the reporter's sweep
(`jobs sync` of the last hours) is the net under both.
"""

from __future__ import annotations

import os
import sys
import time

DEFAULT_SPOOL = "/var/spool/slurm-io/hook"
CONTEXT = "epilog_slurmctld"
LINGER = 1.0  # seconds the background child waits for more job ends


def _log(message: str, *, error: bool = True) -> None:
    """To syslog (daemon facility; slurmctld discards the hook's output) and stderr."""
    try:
        import syslog

        syslog.openlog("jobio-epilog", syslog.LOG_PID, syslog.LOG_DAEMON)
        syslog.syslog(syslog.LOG_ERR if error else syslog.LOG_INFO, message)
    except Exception:
        pass
    try:
        sys.stderr.write(f"jobio-epilog: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass


# The config lookup of slurm_io.config (tests/notify check the two agree). Read here with
# tomllib alone: the config module's imports (dataclasses, pathlib, socket) cost ~15 ms of
# the budget, and a key the hook does not use -- a typo in [mail] -- must not stop it from
# recording jobs.
CONFIG_ENV = "SLURM_IO_CONFIG"
SYSTEM_CONFIG = "/etc/slurm-io/config.toml"
DSN_ENV = "SLURM_IO_DSN"
DEFAULT_DB_TIMEOUT = 20.0
DEFAULT_SCONTROL = "/usr/bin/scontrol"
TIMES = ("SLURM_JOB_START_TIME", "SLURM_JOB_END_TIME")  # 23.02+


class _Settings:
    """What the hook needs from the config: dsn, state_dir, [hook] spool_dir and
    db_timeout; the defaults (and no database attempt) when the file cannot be read."""

    def __init__(self) -> None:
        self.spool_dir = DEFAULT_SPOOL
        self.db_timeout = DEFAULT_DB_TIMEOUT
        self.dsn: str | None = None
        self.state_dir: str | None = None
        self.scontrol = DEFAULT_SCONTROL
        self.config_ok = False
        path = os.environ.get(CONFIG_ENV) or (SYSTEM_CONFIG if os.path.exists(SYSTEM_CONFIG)
                                              else None)
        try:
            data: dict = {}
            if path is not None:
                import tomllib

                with open(path, "rb") as f:
                    data = tomllib.load(f)
            hook = data.get("hook", {})
            spool_dir = hook.get("spool_dir", DEFAULT_SPOOL)
            db_timeout = hook.get("db_timeout", DEFAULT_DB_TIMEOUT)
            dsn = os.environ.get(DSN_ENV) or data.get("dsn")
            state_dir = data.get("state_dir")
            scontrol = data.get("slurm", {}).get("scontrol", DEFAULT_SCONTROL)
            if not isinstance(scontrol, str):
                raise ValueError("[slurm] scontrol is not a path")
            if not (isinstance(hook, dict) and isinstance(spool_dir, str)
                    and isinstance(db_timeout, int | float) and not isinstance(db_timeout, bool)
                    and isinstance(dsn, str | None) and isinstance(state_dir, str | None)):
                raise ValueError("wrong type of dsn, state_dir or [hook] spool_dir/db_timeout")
        except Exception as e:  # unreadable, not TOML, wrong types
            _log(f"configuration {path} unusable ({type(e).__name__}: {e}); spooling to "
                 f"{self.spool_dir} without trying the database")
            return
        self.spool_dir = spool_dir
        self.db_timeout = float(db_timeout)
        self.dsn = dsn or None
        self.state_dir = state_dir
        self.scontrol = scontrol
        self.config_ok = True


def hook_dsn(dsn: str | None, state_dir: str | None) -> str:
    """The DSN the hook connects with. Without one configured: the embedded server of the
    state dir, as the hook's own OS account (peer authentication) -- the hook never starts
    a server or initialises one."""
    if dsn:
        return dsn
    import pwd
    from pathlib import Path

    from slurm_io.paths import default_state_dir
    from slurm_io.store.db import as_user
    from slurm_io.store.embedded import EmbeddedPostgres

    conninfo = EmbeddedPostgres(Path(state_dir) if state_dir else default_state_dir()).conninfo
    if os.geteuid() != 0:
        conninfo = as_user(conninfo, pwd.getpwuid(os.geteuid()).pw_name)
    return conninfo


def run(env: dict[str, str], *, fork: bool = True) -> str:
    """The hook's work for environment `env`; a word for tests and logs: "spooled",
    "spooled+db" (foreground), "ignored", "no-spool". Never raises for bad input."""
    slurm_env = {k: v for k, v in env.items()
                 if k.startswith("SLURM_") and not k.startswith("SLURM_IO_")}
    context = slurm_env.get("SLURM_SCRIPT_CONTEXT")
    if context not in (None, CONTEXT):
        _log(f"run as {context}, not as EpilogSlurmctld: nothing done")
        return "ignored"
    raw = slurm_env.get("SLURM_JOB_ID") or slurm_env.get("SLURM_JOBID") or ""
    from slurm_io.jobs.fields import is_job_id

    if not is_job_id(raw):  # ASCII digits in range: int() takes `٣`, isdigit() takes `²`
        _log(f"no job id in the environment (SLURM_JOB_ID={ascii(raw)[:60]}): nothing done")
        return "ignored"
    job = int(raw)
    settings = _Settings()
    hook_time = time.time()
    from slurm_io.notify import hookspool

    memory: tuple[dict[str, str], float] | None = None
    try:
        hookspool.write_request(settings.spool_dir, job, slurm_env, hook_time=hook_time,
                                host=os.uname().nodename)
        outcome = "spooled"
    except Exception as e:
        _log(f"job {job}: cannot spool to {settings.spool_dir} ({type(e).__name__}: {e}); "
             "trying the database only")
        memory = (slurm_env, hook_time)
        outcome = "no-spool"
    if not settings.config_ok or settings.db_timeout <= 0:
        return outcome
    if not fork:
        _drain(settings, memory)
        _add_times(settings, slurm_env, hook_time)
        return outcome + "+db"
    _spawn(settings, memory, slurm_env, hook_time)
    return outcome


def _add_times(settings: _Settings, env: dict[str, str], hook_time: float) -> None:
    """Store the job again with the start and end time from scontrol when the release put
    none in the environment (22.05). In the background child, after the spool is handled:
    scontrol is an RPC to slurmctld, for neither the hook's budget nor the spool's drain;
    the upsert only fills the times in (the queue row exists already)."""
    if all(env.get(k) for k in TIMES):
        return
    from slurm_io import procs
    from slurm_io.slurm.jobend import scontrol_job_times

    job = int(env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or 0)
    try:
        start, end = scontrol_job_times(settings.scontrol, job)
    except (OSError, procs.Timeout) as e:
        _log(f"job {job}: no start/end time from {settings.scontrol}: {e}")
        return
    if start is None and end is None:
        return
    times = {k: str(int(v)) for k, v in zip(TIMES, (start, end), strict=True) if v}
    from slurm_io.notify import hookspool

    conn = _connect(settings)
    try:
        hookspool.store_request(conn, {**env, **times}, hook_time, source="hook")
    finally:
        conn.close()  # type: ignore[attr-defined]


def _spawn(settings: _Settings, memory: tuple[dict[str, str], float] | None,
           env: dict[str, str], hook_time: float) -> None:
    """Fork the detached, deadline-bound child that does the database part."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError as e:
        _log(f"cannot fork ({e}): the reporter will ingest the spool")
        return
    if pid:
        return
    try:  # the child: never returns
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, 1024)  # slurmscriptd's pipes, our own /dev/null
        import signal

        signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the deadline kills, whatever blocks
        signal.alarm(max(1, int(settings.db_timeout + 0.999)))
        os.nice(10)  # the next hooks, not this child, are the ones with a deadline
        _drain(settings, memory)
        _add_times(settings, env, hook_time)
    except BaseException as e:
        _log(f"background database attempt failed: {type(e).__name__}: {e}")
    finally:
        os._exit(0)


def _drain(settings: _Settings, memory: tuple[dict[str, str], float] | None) -> None:
    """Ingest the spool (and an unspooled record) into PostgreSQL, holding the drain lock;
    stop at the first database error.

    After the spool is empty the child lingers (LINGER seconds, within its deadline) with
    the lock and the connection, picking up the files of the hooks that run meanwhile: they
    find the lock taken and fork no child of their own. A train of job ends then costs one
    psycopg import and one connection, and the hooks are not slowed by their children.
    """
    from slurm_io.notify import hookspool

    deadline = time.monotonic() + settings.db_timeout - 2.0
    conn = None
    try:
        while True:
            with hookspool.drain_lock(settings.spool_dir) as held:
                if not held and memory is None:
                    return  # the holder takes our file with the others
                if conn is None:
                    try:
                        conn = _connect(settings)
                    except Exception:
                        # Keep the lock a moment: the hooks of the next job ends skip their
                        # own doomed attempt (and its psycopg import); their files wait in
                        # the spool for the reporter.
                        if held:
                            time.sleep(max(0.0, min(LINGER, deadline - time.monotonic())))
                        raise
                if memory is not None:
                    _store_memory(conn, memory)
                    memory = None
                if not held:
                    return
                hookspool.ingest(conn, settings.spool_dir, source="hook")
                idle_until = min(time.monotonic() + LINGER, deadline)
                while time.monotonic() < idle_until:
                    time.sleep(0.02)
                    if hookspool.pending(settings.spool_dir):
                        hookspool.ingest(conn, settings.spool_dir, source="hook")
                        idle_until = min(time.monotonic() + LINGER, deadline)
            # released: a hook that failed to get the lock meanwhile left its file to us
            if not hookspool.pending(settings.spool_dir) or time.monotonic() > deadline:
                return
    finally:
        if conn is not None:
            import contextlib

            with contextlib.suppress(Exception):
                conn.close()  # type: ignore[attr-defined]


def _store_memory(conn: object, memory: tuple[dict[str, str], float]) -> None:
    """Store the record that could not be spooled; one that cannot be stored goes to the
    quarantine (a `problem` row with the environment) instead of failing the child."""
    import json

    from slurm_io.notify import hookspool

    try:
        hookspool.store_request(conn, memory[0], memory[1], source="hook")
    except Exception as e:
        if not hookspool.unstorable(e):
            raise
        hookspool.quarantine(conn, None, f"{type(e).__name__}: {e}", source="hook-env",
                             record=json.dumps(memory[0], sort_keys=True))


def _connect(settings: _Settings) -> object:
    if sys.flags.no_site:  # started with -S (epilog/jobio-epilog in a checkout)
        import site

        site.main()  # site-packages: psycopg, python-hostlist
    from slurm_io.store.db import connect_once

    return connect_once(hook_dsn(settings.dsn, settings.state_dir),
                        timeout=settings.db_timeout, application="jobio-epilog")


def main() -> None:
    """Entry point: always exit 0 (slurmctld only logs a failure; there is nothing to gain
    from one, and nothing here may hold up the job's completion)."""
    try:
        run(dict(os.environ))
    except BaseException as e:
        _log(f"unexpected {type(e).__name__}: {e}")
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(0)


if __name__ == "__main__":
    main()
