"""Start-up where a person waits, against the floor of the libraries each command needs.

    .venv/bin/python bench/bench_startup.py --dsn DSN [--user alice] [--pairs 11]
        [--venv /tmp/slurm-io-bench-venv] [--json]

As a site installs it: a venv of Debian's /usr/bin/python3 with slurm-io installed from this
checkout, not editable (bench_service.public_venv). Every figure is a whole new process run
as the user (`--user`, by uid/gid: no runuser process in between), timed from fork to exit,
the command and its floor in alternation (`--pairs` pairs, medians), so that a load change
hits both alike:

- local mode: `jobio show JOBID` with the database (peer) vs `python -c "import psycopg"`;
- client mode: `jobio --server URL JOBID` through a running `jobio serve` with MUNGE vs
  `python -c "import click, ssl, http.client, json, ctypes"`;
- the job-end hook (epilog/jobio-epilog through the wrapper of docs/hook.md, everything
  behind it down) vs `python -c pass`.

A command cannot start before the libraries it needs are imported: the ratio is what the
project's own code costs on top. Targets (issue 25): 1.25x, 1.25x and 3x.
DSN: the superuser conninfo of a database built by `bench_show.py build`. Needs root (the
service runs as its own account, as in bench_service.py).
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.bench_hook import ENV as HOOK_ENV
from bench.bench_hook import HOOK
from bench.bench_service import (
    RUNUSER,
    SERVICE_ACCOUNT,
    TESTBED_MUNGE,
    Client,
    free_port,
    make_cert,
    prepare,
    public_venv,
)

FLOOR_CLIENT = "import click, ssl, http.client, json, ctypes"
# what neither the client mode nor the hook may import (each costs tens of ms)
HEAVY = ("psycopg", "jinja2", "matplotlib", "urwid", "cheroot", "h11")
TARGETS = {"local": 1.25, "client": 1.25, "hook": 3.0}


def timed(argv: list[str], env: dict[str, str], user: pwd.struct_passwd
          ) -> tuple[float, float]:
    """(wall s, CPU s) of one whole process run as `user` (and of what it waited for); it
    must succeed. CPU is what a loaded machine does not stretch."""
    cpu0 = _children_cpu()
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd="/", capture_output=True, user=user.pw_uid,
                          group=user.pw_gid, extra_groups=[], check=False)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return wall, _children_cpu() - cpu0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def heavy_imports(argv: list[str], env: dict[str, str], user: pwd.struct_passwd
                  ) -> list[str]:
    """The HEAVY packages one run of `argv` imports (`-X importtime`'s log, by environment so
    that wrappers pass it on; a forked child's log goes to its /dev/null)."""
    proc = subprocess.run(argv, env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, cwd="/",
                          capture_output=True, text=True, user=user.pw_uid, group=user.pw_gid,
                          extra_groups=[], check=False)
    names = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
             if line.startswith("import time:") and line.count("|") == 2}
    if not names:
        sys.exit(f"no import log from {' '.join(argv)}: {proc.stderr[-500:]}")
    return sorted(names & set(HEAVY))


def alternate(pairs: int, cmd: tuple[list[str], dict[str, str]],
              floor: tuple[list[str], dict[str, str]], user: pwd.struct_passwd
              ) -> dict[str, float]:
    """Median wall ms of `cmd` and of `floor`, run one after the other `pairs` times (one
    unmeasured pair first: the files in the page cache, as on a used login node)."""
    timed(*cmd, user)
    timed(*floor, user)
    a, b = [], []
    for _ in range(pairs):
        b.append(timed(*floor, user))
        a.append(timed(*cmd, user))
    ms, floor_ms = (1000 * statistics.median(w for w, _ in x) for x in (a, b))
    cpu, floor_cpu = (1000 * statistics.median(c for _, c in x) for x in (a, b))
    return {"ms": round(ms, 1), "floor_ms": round(floor_ms, 1), "ratio": round(ms / floor_ms, 3),
            "cpu_ms": round(cpu, 1), "floor_cpu_ms": round(floor_cpu, 1)}


def measure(dsn: str, user_name: str, venv: Path, pairs: int, munge_socket: str
            ) -> dict[str, Any]:
    user = pwd.getpwnam(user_name)
    jobs = prepare(dsn, user_name)
    jobio = public_venv(venv)
    python = str(jobio.parent / "python")
    d = conninfo_to_dict(dsn)
    user_dsn = make_conninfo("", host=d["host"], port=d.get("port", "5432"), dbname=d["dbname"])
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    work.chmod(0o755)
    host = "127.0.0.1"
    port = free_port(host)
    cert, key = make_cert(work, "ec", SERVICE_ACCOUNT, host)
    svc_cfg = work / "service.toml"
    svc_cfg.write_text(f'dsn = "{user_dsn}"\n[munge]\nsocket = "{munge_socket}"\n'
                       f'[service]\nlisten = "{host}"\nport = {port}\n'
                       f'tls_cert = "{cert}"\ntls_key = "{key}"\n')
    client_cfg = work / "client.toml"
    client_cfg.write_text(f'server_ca = "{cert}"\n[munge]\nsocket = "{munge_socket}"\n')
    local_cfg = work / "local.toml"
    local_cfg.write_text(f'dsn = "{user_dsn}"\n')
    spool = work / "spool"
    spool.mkdir()
    os.chown(spool, user.pw_uid, user.pw_gid)
    hook_cfg = work / "hook.toml"
    hook_cfg.write_text(f'dsn = "host=/nonexistent/pg dbname=x"\n[hook]\n'
                        f'spool_dir = "{spool}"\n')
    wrapper = work / "jobio-epilog"
    wrapper.write_text(f"#!/bin/sh\nJOBIO_PYTHON={python}\nSLURM_IO_CONFIG={hook_cfg}\n"
                       f"export JOBIO_PYTHON SLURM_IO_CONFIG\nexec {HOOK}\n")
    for p in (svc_cfg, client_cfg, local_cfg, hook_cfg, wrapper):
        p.chmod(0o755)
    log = open(work / "service.log", "wb")  # noqa: SIM115
    svc = subprocess.Popen([RUNUSER, "-u", SERVICE_ACCOUNT, "--", str(jobio), "serve"],
                           env={"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(svc_cfg)},
                           stdout=log, stderr=subprocess.STDOUT, cwd="/",
                           start_new_session=True)
    try:
        probe = Client(host, port, cert)
        for _ in range(300):
            try:
                probe.get("/v1/health", "")
                break
            except (OSError, RuntimeError):
                time.sleep(0.1)
        base = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
        job = str(jobs[0])
        client = ([str(jobio), "--server", f"https://{host}:{port}", job],
                  {**base, "SLURM_IO_CONFIG": str(client_cfg)})
        hook = ([str(wrapper)], {**HOOK_ENV, "SLURM_JOB_ID": "77", "SLURM_JOBID": "77"})
        out: dict[str, Any] = {
            "local": alternate(
                pairs, ([str(jobio), "show", job], {**base, "SLURM_IO_CONFIG": str(local_cfg)}),
                ([python, "-c", "import psycopg"], base), user),
            "client": alternate(pairs, client, ([python, "-c", FLOOR_CLIENT], base), user),
            "hook": alternate(pairs, hook, ([python, "-c", "pass"], base), user),
        }
        if not any(spool.iterdir()):
            sys.exit("the hook spooled nothing")
        out["heavy_imports"] = {"client": heavy_imports(*client, user),
                                "hook": heavy_imports(*hook, user)}
        return out
    finally:
        os.killpg(svc.pid, 15)
        svc.wait(timeout=30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--user", default="alice")
    ap.add_argument("--pairs", type=int, default=11)
    ap.add_argument("--venv", type=Path, default=Path("/tmp/slurm-io-bench-venv"))
    ap.add_argument("--munge-socket", default=TESTBED_MUNGE)
    ap.add_argument("--json", action="store_true", help="one JSON object instead of lines")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (the service runs as its own account, commands as the user)")
    if subprocess.run(["id", SERVICE_ACCOUNT], capture_output=True).returncode:
        subprocess.run(["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", SERVICE_ACCOUNT],
                       check=True)
    out = measure(args.dsn, args.user, args.venv, args.pairs, args.munge_socket)
    if args.json:
        print(json.dumps(out))
    else:
        for kind in TARGETS:
            r = out[kind]
            print(f"{kind:<7} {r['ms']:7.1f} ms vs floor {r['floor_ms']:7.1f} ms: "
                  f"{r['ratio']:.2f}x (target <= {TARGETS[kind]}x); CPU {r['cpu_ms']:.1f} "
                  f"vs {r['floor_cpu_ms']:.1f} ms")
    heavy = {k: v for k, v in out["heavy_imports"].items() if v}
    if heavy:
        sys.exit(f"imported where they must not be: {heavy}")


if __name__ == "__main__":
    main()
