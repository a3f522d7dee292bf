"""Honest users of `jobio serve` while hostile clients attack it (issue 18).

    .venv/bin/python bench/bench_service_attack.py [--dsn DSN] [--user alice]
        [--seconds 30] [--threads 16] [--trickle 64] [--silent 64] [--big 4]
        [--venv DIR] [--munge-socket SOCK] [--honest 4] [--flood 32 --flood-user bob]

As root, on loopback only. Without --dsn it builds a small database (3,000 jobs over 3 days,
bench_show.py's generator) in its own embedded PostgreSQL (/var/tmp/slurm-io-bench-attack,
kept between runs). It starts `jobio serve` (ECDSA TLS, --threads workers) as the service
account, from a public venv of this checkout (--venv; point it at a venv of another version
to compare), then runs two phases of --seconds each:

1. quiet: --honest threads, each asking `GET /v1/show?jobid=J` for random finished jobs of
   the user, one new TLS connection per request (as a new `jobio` process does), with
   credentials minted beforehand as the user; plus `jobio J --json` run as the user;
2. attack: the same, while a separate attacker process (asyncio) holds --trickle
   connections sending one header byte a second, --silent connections sending nothing, and
   --big connections streaming a header of up to 100 MB, each reconnecting when cut.

3. flood: the same honest load while --flood threads of another user (--flood-user) send
   requests back to back (one user's load against another's: the fair pool's bound).

Prints, per phase: honest requests, their p50/p99/max latency, failures, the new-process
`jobio` p50/max, the service's peak RSS (VmRSS sampled every 0.1 s), and the attackers'
connection counts. Targets (issue 18): p99 under 1 s and peak RSS under 400 MB under attack.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.bench_service import (
    RUNUSER,
    SERVICE_ACCOUNT,
    TESTBED_MUNGE,
    Client,
    Requests,
    make_cert,
    mint,
    pct,
    prepare,
    public_venv,
    run_as,
)

STATE = Path("/var/tmp/slurm-io-bench-attack")
DB = "bench_attack"
PORT = 18463


def database(args: argparse.Namespace) -> str:
    """The superuser conninfo of the bench database (built on first use)."""
    if args.dsn:
        return str(args.dsn)
    from bench import bench_show
    from slurm_io.store.embedded import EmbeddedPostgres

    STATE.mkdir(parents=True, exist_ok=True)
    STATE.chmod(0o755)
    base = EmbeddedPostgres(STATE).ensure()
    with psycopg.connect(base, autocommit=True) as conn:
        exists = conn.execute("SELECT FROM pg_database WHERE datname = %s", (DB,)).fetchone()
    if exists is None:
        bench_show.build(argparse.Namespace(dsn=base, db=DB, jobs=3000, days=3))
    d = conninfo_to_dict(base)
    d["dbname"] = DB
    return make_conninfo(**d)


def service_pid(runuser_pid: int) -> int:
    """The `jobio serve` process under runuser."""
    for task in Path(f"/proc/{runuser_pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            return int(child)
    return runuser_pid


class RssSampler:
    """The peak VmRSS (MB) of a process since the last `reset`, sampled every 0.1 s."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            with contextlib.suppress(OSError, ValueError):
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        self.peak = max(self.peak, int(line.split()[1]) / 1024)

    def reset(self) -> float:
        peak, self.peak = self.peak, 0.0
        return peak

    def stop(self) -> None:
        self._stop.set()


# --- the attacker (a child process: its work must not share the honest clients' GIL) ----

async def _attack(port: int, ca: str, kind: str, stop: float, counts: dict[str, int]) -> None:
    ctx = ssl.create_default_context(cafile=ca)
    loop = asyncio.get_running_loop()
    while loop.time() < stop:
        counts[kind + "_connections"] += 1
        writer = None
        try:
            if kind == "silent":
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                await asyncio.wait_for(reader.read(1), stop - loop.time())
            else:
                reader, writer = await asyncio.wait_for(asyncio.open_connection(
                    "127.0.0.1", port, ssl=ctx, server_hostname="127.0.0.1"), 30)
                writer.write(b"GET /v1/show?jobid=1 HTTP/1.1\r\nHost: x\r\nX-A: ")
                chunk, n = (b"a", 1) if kind == "trickle" else (b"a" * 65536, 1600)
                for _ in range(n if kind == "big" else 10**6):
                    if loop.time() >= stop or reader.at_eof():
                        break
                    writer.write(chunk)
                    await asyncio.wait_for(writer.drain(), 30)
                    if kind == "trickle":
                        await asyncio.sleep(1.0)
        except (OSError, TimeoutError, ssl.SSLError, asyncio.IncompleteReadError):
            pass
        finally:
            if writer is not None:
                with contextlib.suppress(Exception):
                    writer.close()
        counts[kind + "_cut"] += 1
        await asyncio.sleep(0.05)


def attacker(port: int, ca: str, seconds: float, trickle: int, silent: int, big: int) -> None:
    import logging

    logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # its writes to cut connections
    async def main() -> dict[str, int]:
        stop = asyncio.get_running_loop().time() + seconds
        counts: dict[str, int] = {f"{k}_{w}": 0 for k in ("trickle", "silent", "big")
                                  for w in ("connections", "cut")}
        await asyncio.gather(*[_attack(port, ca, kind, stop, counts)
                               for kind, n in (("trickle", trickle), ("silent", silent),
                                               ("big", big)) for _ in range(n)])
        return counts

    counts = asyncio.run(main())
    print(" ".join(f"{k}={v}" for k, v in counts.items()), flush=True)


# --- the honest users --------------------------------------------------------------------

def honest(args: argparse.Namespace, client: Client, jobs: list[str], jobio: Path,
           client_cfg: Path, rng: random.Random) -> dict[str, float]:
    """Honest load for args.seconds: in-process clients and new `jobio` processes."""
    n = int(args.honest * args.seconds * 20)
    targets = [f"/v1/show?jobid={rng.choice(jobs)}" for _ in range(n)]
    requests = Requests(targets, mint(args.user, args.munge_socket, targets),
                        time.perf_counter() + args.seconds)
    stop = requests.stop
    lock = threading.Lock()
    lat: list[float] = []
    failures: list[str] = []

    def run() -> None:
        while (nxt := requests.next()) is not None:
            t = time.perf_counter()
            try:
                client.get(*nxt)
                with lock:
                    lat.append(time.perf_counter() - t)
            except (OSError, RuntimeError) as e:
                with lock:
                    failures.append(str(e))
                    lat.append(time.perf_counter() - t)
            time.sleep(0.05)

    threads = [threading.Thread(target=run) for _ in range(args.honest)]
    for th in threads:
        th.start()
    walls = []
    while time.perf_counter() < stop - 2:
        walls.append(run_as(args.user, jobio, [rng.choice(jobs), "--json"],
                            client_cfg)[0])
    for th in threads:
        th.join()
    return {"requests": len(lat), "failures": len(failures), "p50": pct(lat, 50),
            "p99": pct(lat, 99), "max": max(lat), "jobio": len(walls),
            "jobio_p50": pct(walls, 50), "jobio_max": max(walls)}


def flood(args: argparse.Namespace, client: Client, jobs: list[str], stop: float,
          out: dict[str, float]) -> list[threading.Thread]:
    """--flood threads of --flood-user, each sending requests back to back until `stop`."""
    n = int(args.flood * args.seconds * 40)
    targets = [f"/v1/show?jobid={random.choice(jobs)}" for _ in range(n)]
    requests = Requests(targets, mint(args.flood_user, args.munge_socket, targets), stop)
    lock = threading.Lock()
    out.update(requests=0, busy=0)

    def run() -> None:
        while (nxt := requests.next()) is not None:
            try:
                client.get(*nxt)
                key = "requests"
            except (OSError, RuntimeError):
                key = "busy"
            with lock:
                out[key] += 1

    threads = [threading.Thread(target=run) for _ in range(args.flood)]
    for th in threads:
        th.start()
    return threads


def report(name: str, r: dict[str, float], rss: float) -> None:
    print(f"{name}: {r['requests']:.0f} honest requests ({r['failures']:.0f} failed): latency "
          f"p50 {1000 * r['p50']:.0f} ms, p99 {1000 * r['p99']:.0f} ms, max "
          f"{1000 * r['max']:.0f} ms; {r['jobio']:.0f} x `jobio J --json` as a new process: "
          f"p50 {1000 * r['jobio_p50']:.0f} ms, max {1000 * r['jobio_max']:.0f} ms; service "
          f"peak RSS {rss:.0f} MB", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn")
    ap.add_argument("--user", default="alice")
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--honest", type=int, default=4)
    ap.add_argument("--trickle", type=int, default=64)
    ap.add_argument("--silent", type=int, default=64)
    ap.add_argument("--big", type=int, default=4)
    ap.add_argument("--flood", type=int, default=32,
                    help="threads of --flood-user asking back to back in a third phase (0: none)")
    ap.add_argument("--flood-user", default="bob")
    ap.add_argument("--venv", type=Path, default=Path("/tmp/slurm-io-bench-attack-venv"))
    ap.add_argument("--no-install", action="store_true",
                    help="use --venv as it is (another version of slurm-io)")
    ap.add_argument("--munge-socket", default=TESTBED_MUNGE)
    ap.add_argument("--attacker", nargs=2, metavar=("PORT", "CA"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.attacker:
        attacker(int(args.attacker[0]), args.attacker[1], args.seconds, args.trickle,
                 args.silent, args.big)
        return
    if os.geteuid() != 0:
        sys.exit("run as root (runs commands as the user and the service account)")
    if subprocess.run(["id", SERVICE_ACCOUNT], capture_output=True).returncode:
        subprocess.run(["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", SERVICE_ACCOUNT],
                       check=True)
    dsn = database(args)
    with psycopg.connect(dsn) as conn:  # the ids users type, from the JobIDRaw prepare gives
        jobs = [r[0] for r in conn.execute("SELECT jobid FROM job WHERE job_raw = ANY(%s)",
                                           (prepare(dsn, args.user),))]
        flood_jobs = [r[0] for r in conn.execute(
            "SELECT jobid FROM job WHERE job_raw = ANY(%s)", (prepare(dsn, args.flood_user),))]
    jobio = args.venv / "bin/jobio" if args.no_install else public_venv(args.venv)
    measure(args, dsn, jobs, jobio, flood_jobs)


def measure(args: argparse.Namespace, dsn: str, jobs: list[str], jobio: Path,
            flood_jobs: list[str]) -> None:
    d = conninfo_to_dict(dsn)
    user_dsn = make_conninfo("", host=d["host"], port=d.get("port", "5432"), dbname=d["dbname"])
    work = Path(tempfile.mkdtemp(prefix="bench-attack-"))
    work.chmod(0o755)
    cert, key = make_cert(work, "ec", SERVICE_ACCOUNT, "127.0.0.1")
    svc_cfg, client_cfg = work / "service.toml", work / "client.toml"
    svc_cfg.write_text(f'dsn = "{user_dsn}"\n[munge]\nsocket = "{args.munge_socket}"\n'
                       f'[service]\nlisten = "127.0.0.1"\nport = {PORT}\n'
                       f'tls_cert = "{cert}"\ntls_key = "{key}"\nthreads = {args.threads}\n')
    client_cfg.write_text(f'server = "https://127.0.0.1:{PORT}"\nserver_ca = "{cert}"\n'
                          f'[munge]\nsocket = "{args.munge_socket}"\n')
    for p in (svc_cfg, client_cfg):
        p.chmod(0o644)
    log = open(work / "service.log", "wb")  # noqa: SIM115
    svc = subprocess.Popen([RUNUSER, "-u", SERVICE_ACCOUNT, "--", str(jobio), "serve"],
                           env={"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(svc_cfg)},
                           stdout=log, stderr=subprocess.STDOUT, cwd="/",
                           start_new_session=True)
    client = Client("127.0.0.1", PORT, cert)
    attack: subprocess.Popen[str] | None = None
    try:
        for _ in range(300):
            try:
                client.get("/v1/health", "")
                break
            except (OSError, RuntimeError):
                time.sleep(0.1)
        rss = RssSampler(service_pid(svc.pid))
        rng = random.Random(1)
        print(f"{len(jobs)} finished jobs of {args.user}; {args.threads} threads; "
              f"{args.seconds:.0f} s per phase; {jobio}", flush=True)
        rss.reset()
        report("quiet", honest(args, client, jobs, jobio, client_cfg, rng), rss.reset())
        attack = subprocess.Popen(
            [sys.executable, __file__, "--attacker", str(PORT), str(cert), "--seconds",
             str(args.seconds + 3), "--trickle", str(args.trickle), "--silent",
             str(args.silent), "--big", str(args.big)], stdout=subprocess.PIPE, text=True)
        time.sleep(3)  # the attackers connect
        result = honest(args, client, jobs, jobio, client_cfg, rng)
        report(f"attack ({args.trickle} trickling, {args.silent} silent, {args.big} "
               f"big-header)", result, rss.reset())
        out, _ = attack.communicate(timeout=120)
        print(f"attackers: {out.strip()}")
        if args.flood:
            rss.reset()
            counts: dict[str, float] = {}
            threads = flood(args, client, flood_jobs, time.perf_counter() + args.seconds + 1,
                            counts)
            result = honest(args, client, jobs, jobio, client_cfg, rng)
            for th in threads:
                th.join()
            report(f"flood ({args.flood} threads of {args.flood_user} back to back: "
                   f"{counts['requests']:.0f} answered, {counts['busy']:.0f} refused)",
                   result, rss.reset())
        rss.stop()
    finally:
        if attack is not None and attack.poll() is None:
            attack.kill()
        os.killpg(svc.pid, 15)
        svc.wait(timeout=30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
