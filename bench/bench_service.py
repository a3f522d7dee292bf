"""`jobio JOBID` through the service (`jobio serve`, MUNGE) against a local `jobio show`.

    .venv/bin/python bench/bench_service.py --dsn DSN [--user alice] [--clients 50]
        [--seconds 20] [--munge-socket SOCK] [--venv DIR]

DSN: the superuser conninfo of a database built by `bench_show.py build` (its jobs belong to
uids 1000-1299, so an OS user in that range owns some of them). As root, it makes the user's
role (`jobio db users`), a service account and role (`jobiosvc`, in jobio_service), a public
venv of /usr/bin/python3 with this checkout (cached in --venv), and starts `jobio serve` as
that account, with the given munged (default: the Slurm testbed's). Then it measures:

1. wall time of `jobio JOBID --json` as a new process run as the user, through the service
   and directly against the database (peer), N random jobs of the user's each;
2. the service's own time per request (its Server-Timing header), one request at a time;
3. the client's start-up: `jobio --version`, and whether psycopg was imported in client mode;
4. 50 concurrent clients (threads, keep-alive off, credentials minted beforehand with
   `munge -U`), for --seconds: requests/s, p50/p99 latency and service time.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import pwd
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from slurm_io.service.protocol import request_payload

ROOT = Path(__file__).resolve().parent.parent
TESTBED_MUNGE = "/var/lib/slurm-testbed/run/munge/munge.socket.2"
RUNUSER = shutil.which("runuser") or "/usr/sbin/runuser"
SERVICE_ACCOUNT = "jobiosvc"


def public_venv(path: Path) -> Path:
    """A venv of the system Python that every user can execute, with this checkout."""
    if not (path / "bin/jobio").exists():
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(path)], check=True)
        subprocess.run([str(path / "bin/pip"), "install", "-q", str(ROOT)], check=True)
    else:  # the dependencies are there: refresh slurm-io itself
        subprocess.run([str(path / "bin/pip"), "install", "-q", "--force-reinstall",
                        "--no-deps", str(ROOT)], check=True)
    path.chmod(0o755)
    return path / "bin/jobio"


def prepare(dsn: str, user: str) -> list[int]:
    from slurm_io.store import accounts

    uid = pwd.getpwnam(user).pw_uid
    with psycopg.connect(dsn) as conn:
        from slurm_io.store import migrate

        migrate.upgrade(conn)
        accounts.sync_accounts(conn, [(user, uid)], [])
        if conn.execute("SELECT FROM pg_roles WHERE rolname = %s",
                        (SERVICE_ACCOUNT,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN IN ROLE jobio_service").format(
                sql.Identifier(SERVICE_ACCOUNT)))
        conn.commit()
        jobs = [r[0] for r in conn.execute(
            "SELECT job FROM job WHERE uid = %s AND end_time IS NOT NULL", (uid,))]
    if not jobs:
        sys.exit(f"no finished jobs of uid {uid} in the database")
    return jobs


def run_as(user: str, jobio: Path, args: list[str], config: Path) -> tuple[float, str]:
    env = {"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(config), "LC_ALL": "C.UTF-8"}
    t = time.perf_counter()
    proc = subprocess.run([RUNUSER, "-u", user, "--", str(jobio), *args], env=env, cwd="/",
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"jobio {' '.join(args)} as {user}: {proc.stderr}")
    return wall, proc.stdout


def mint(user: str, socket: str, target: str) -> str:
    return subprocess.run(["munge", "-S", socket, "-U", user, "-t", "300"],
                          input=request_payload("GET", target, b""), capture_output=True,
                          check=True).stdout.decode().strip()


def request(url: str, target: str, cred: str) -> tuple[float, float]:
    """(latency s, service ms) of one GET."""
    req = urllib.request.Request(url + target, headers={"Authorization": f"MUNGE {cred}"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as resp:
        resp.read()
        dur = resp.headers.get("Server-Timing", "app;dur=0").split("dur=")[1]
    return time.perf_counter() - t, float(dur)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--user", default="alice")
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--n", type=int, default=20, help="new-process runs of each kind")
    ap.add_argument("--munge-socket", default=TESTBED_MUNGE)
    ap.add_argument("--venv", type=Path, default=Path("/tmp/slurm-io-bench-venv"))
    ap.add_argument("--threads", type=int, default=16, help="service worker threads")
    ap.add_argument("--processes", type=int, default=1, help="service processes")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (runs commands as the user and the service account)")
    subprocess.run(["id", SERVICE_ACCOUNT], check=False, capture_output=True).returncode \
        and subprocess.run(["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", SERVICE_ACCOUNT],
                           check=True)
    jobs = prepare(args.dsn, args.user)
    jobio = public_venv(args.venv)
    d = conninfo_to_dict(args.dsn)
    user_dsn = make_conninfo("", host=d["host"], port=d.get("port", "5432"), dbname=d["dbname"])
    work = Path(tempfile.mkdtemp(prefix="bench-service-"))
    work.chmod(0o755)
    port = 18453
    url = f"http://127.0.0.1:{port}"
    svc_cfg = work / "service.toml"
    svc_cfg.write_text(f'dsn = "{user_dsn}"\n[munge]\nsocket = "{args.munge_socket}"\n'
                       f'[service]\nlisten = "127.0.0.1"\nport = {port}\n'
                       f"threads = {args.threads}\nprocesses = {args.processes}\n")
    client_cfg = work / "client.toml"
    client_cfg.write_text(f'server = "{url}"\n[munge]\nsocket = "{args.munge_socket}"\n')
    local_cfg = work / "local.toml"
    local_cfg.write_text(f'dsn = "{user_dsn}"\n')
    for p in (svc_cfg, client_cfg, local_cfg):
        p.chmod(0o644)
    log = open(work / "service.log", "wb")  # noqa: SIM115
    svc = subprocess.Popen([RUNUSER, "-u", SERVICE_ACCOUNT, "--", str(jobio), "serve"],
                           env={"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(svc_cfg)},
                           stdout=log, stderr=subprocess.STDOUT, cwd="/",
                           start_new_session=True)
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url + "/v1/health", timeout=2).read()
                break
            except OSError:
                time.sleep(0.1)
        rng = random.Random(1)
        print(f"{len(jobs)} finished jobs of {args.user}; service {url}, "
              f"{args.processes} process(es) x {args.threads} threads")
        for kind, cfg in (("local (peer, direct)", local_cfg), ("through the service", client_cfg)):
            walls = [run_as(args.user, jobio, [str(rng.choice(jobs)), "--json"], cfg)[0]
                     for _ in range(args.n)]
            print(f"jobio JOBID --json, new process, {kind}: median "
                  f"{1000 * statistics.median(walls):.0f} ms, max {1000 * max(walls):.0f} ms")
        walls = [run_as(args.user, jobio, ["--version"], client_cfg)[0] for _ in range(args.n)]
        print(f"jobio --version (start-up): median {1000 * statistics.median(walls):.0f} ms")
        probe = subprocess.run(
            [RUNUSER, "-u", args.user, "--", str(jobio.parent / "python"), "-c",
             "import sys\nfrom slurm_io.cli import main\nsys.argv=['jobio','" + str(jobs[0]) +
             "']\ntry:\n main()\nexcept SystemExit:\n pass\n"
             "print('psycopg imported:', 'psycopg' in sys.modules, file=sys.stderr)"],
            env={"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(client_cfg)},
            capture_output=True, text=True, cwd="/", check=False)
        print("client mode:", probe.stderr.strip().splitlines()[-1])
        # one at a time: the service's own time
        targets = [f"/v1/show?jobid={rng.choice(jobs)}" for _ in range(100)]
        with cf.ThreadPoolExecutor(8) as pool:
            creds = list(pool.map(lambda t: mint(args.user, args.munge_socket, t), targets))
        serial = [request(url, t, c) for t, c in zip(targets, creds, strict=True)]
        lat = [1000 * s[0] for s in serial]
        app = [s[1] for s in serial]
        print(f"one client, {len(serial)} requests: latency p50 {pct(lat, 50):.1f} ms, p99 "
              f"{pct(lat, 99):.1f} ms; service time p50 {pct(app, 50):.1f} ms, p99 "
              f"{pct(app, 99):.1f} ms")
        # concurrent clients, credentials minted beforehand
        n = int(args.clients * args.seconds * 4)
        targets = [f"/v1/show?jobid={rng.choice(jobs)}" for _ in range(n)]
        t = time.perf_counter()
        with cf.ThreadPoolExecutor(8) as pool:
            creds = list(pool.map(lambda x: mint(args.user, args.munge_socket, x), targets))
        print(f"({n} credentials minted in {time.perf_counter() - t:.1f} s)")
        results: list[tuple[float, float]] = []
        lock = threading.Lock()
        it = iter(zip(targets, creds, strict=True))
        stop = time.perf_counter() + args.seconds

        def client() -> None:
            while time.perf_counter() < stop:
                with lock:
                    nxt = next(it, None)
                if nxt is None:
                    return
                r = request(url, *nxt)
                with lock:
                    results.append(r)

        t = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        elapsed = time.perf_counter() - t
        lat = [1000 * r[0] for r in results]
        app = [r[1] for r in results]
        print(f"{args.clients} concurrent clients, {elapsed:.1f} s: {len(results)} requests, "
              f"{len(results) / elapsed:.0f} req/s; latency p50 {pct(lat, 50):.0f} ms, p99 "
              f"{pct(lat, 99):.0f} ms; service time p50 {pct(app, 50):.1f} ms, p99 "
              f"{pct(app, 99):.1f} ms")
    finally:
        os.killpg(svc.pid, 15)
        svc.wait(timeout=30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
