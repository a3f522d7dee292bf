"""`jobio JOBID` through the service (`jobio serve`, MUNGE) against a local `jobio show`.

    .venv/bin/python bench/bench_service.py --dsn DSN [--user alice] [--clients 50]
        [--spread U1,U2,...] [--seconds 20] [--munge-socket SOCK] [--venv DIR] [--tls ec|rsa|none]
        [--munge lib|exec] [--threads 4] [--processes 1] [--no-netns]

DSN: the superuser conninfo of a database built by `bench_show.py build` (its jobs belong to
uids 1000-1299, so an OS user in that range owns some of them). As root, it makes the user's
role (`jobio db users`), a service account and role (`jobiosvc`, in jobio_service), a public
venv of /usr/bin/python3 with this checkout (cached in --venv), and starts `jobio serve` as
that account, with the given munged (default: the Slurm testbed's). Then it measures:

1. wall time of `jobio JOBID --json` as a new process run as the user, through the service
   from a `login` network namespace (its own veth link to the service's address, as on a
   login node; --no-netns: loopback) and directly against the database (peer), N random
   jobs of the user's each; the user's finished jobs are attributed first, as on a site;
2. the service's own time per request (its Server-Timing header), one request at a time;
3. the client's start-up: `jobio --version`, `python -X importtime` of client mode (the
   slowest imports, and whether psycopg was imported);
4. 50 concurrent clients (threads, a new TCP and TLS connection per request as a new
   `jobio` process makes, credentials minted beforehand by a child process running as the
   user), for --seconds: requests/s, p50/p99 latency and service time.

--tls: the service's certificate (ec: ECDSA P-256, rsa: RSA 3072, as docs/deploy.md's
example; none: plain HTTP). --munge: how the service and the client talk to munged
(SLURM_IO_MUNGE; lib: libmunge in process, exec: a munge/unmunge process per credential).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import pwd
import random
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
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
NETNS, VETH = "jobio-bench-login", "jbench0"
SERVICE_IP, LOGIN_IP = "10.79.0.1", "10.79.0.2"  # not the site tests' 10.77/10.78


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (so that two runs, or the suite's small form and a
    person's run, do not fight over one)."""
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def public_venv(path: Path) -> Path:
    """A venv of the system Python that every user can execute, with this checkout installed
    as a site installs it (not editable); reinstalled only when the checkout changed."""
    stamp = path / "slurm-io-source.stamp"
    if not (path / "bin/jobio").exists():
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(path)], check=True)
        subprocess.run([str(path / "bin/pip"), "install", "-q", f"{ROOT}[all]"], check=True)
    elif not stamp.exists() or stamp.read_text() != _source_stamp():
        # the dependencies may have changed with the checkout (pyproject.toml): add any new one
        subprocess.run([str(path / "bin/pip"), "install", "-q", f"{ROOT}[all]"], check=True)
        subprocess.run([str(path / "bin/pip"), "install", "-q", "--force-reinstall",
                        "--no-deps", str(ROOT)], check=True)
    stamp.write_text(_source_stamp())
    path.chmod(0o755)
    return path / "bin/jobio"


def _source_stamp() -> str:
    """Names, sizes and mtimes of the checkout's installed files: changes with any edit."""
    files = [*sorted(p for p in (ROOT / "slurm_io").rglob("*") if p.suffix != ".pyc"),
             ROOT / "pyproject.toml"]
    files += sorted((ROOT / "sql").glob("*.sql")) + sorted((ROOT / "templates").rglob("*"))
    return "\n".join(f"{p.relative_to(ROOT)} {p.stat().st_size} {p.stat().st_mtime_ns}"
                     for p in files if p.is_file())


def prepare(dsn: str, user: str, *, required: bool = True) -> list[int]:
    """The user's role, the service account's role; the Slurm ids of the user's finished
    jobs (what a person types), attributed as on a site (none: exit, unless not
    `required`)."""
    from slurm_io.store import accounts

    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        if required:
            sys.exit(f"{user}: no such OS account (the bench runs requests as that user)")
        return []  # no account, no request of theirs: --spread counts the others
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
            "SELECT job_raw FROM job WHERE uid = %s AND end_time IS NOT NULL", (uid,))]
        # a site's finished jobs are attributed (`jobio attribute`): show reads job_io
        todo = [r[0] for r in conn.execute(
            "SELECT j.job_raw FROM job j WHERE j.uid = %s AND j.end_time IS NOT NULL AND NOT "
            "EXISTS (SELECT FROM job_io i WHERE i.job = j.job)", (uid,))]
        if todo:
            from slurm_io.attribute.batch import attribute_jobs
            from slurm_io.jobs.store import find_jobs

            t = time.perf_counter()
            attribute_jobs(conn, [i for job in todo for i in find_jobs(conn, str(job))])
            conn.commit()
            print(f"attributed {len(todo)} finished jobs of {user} in "
                  f"{time.perf_counter() - t:.1f} s")
    if not jobs and required:
        sys.exit(f"no finished jobs of uid {uid} in the database")
    return jobs


def run_as(user: str, jobio: Path, args: list[str], config: Path, *, netns: str | None = None,
           env: dict[str, str] | None = None) -> tuple[float, str]:
    """(wall s, stdout) of `jobio args` run as `user`, in `netns` if given."""
    env = {"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(config), "LC_ALL": "C.UTF-8",
           **(env or {})}
    cmd = [RUNUSER, "-u", user, "--", str(jobio), *args]
    if netns:
        cmd = ["ip", "netns", "exec", netns, *cmd]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd="/", capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        sys.exit(f"jobio {' '.join(args)} as {user}: {proc.stderr}")
    return wall, proc.stdout


def mint(user: str, socket: str, targets: list[str]) -> list[str]:
    """Credentials of `user` for GET `targets`, minted by a child process that becomes the
    user (libmunge in process, or `munge` when libmunge is absent): munged sees that uid."""
    from slurm_io import munge

    pw = pwd.getpwnam(user)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to the user, mint, write one credential a line
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            with os.fdopen(w, "w") as out:
                for t in targets:
                    out.write(munge.encode(request_payload("GET", t, b""), socket=socket,
                                           ttl=300) + "\n")
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as inp:
        creds = inp.read().split()
    os.waitpid(pid, 0)
    if len(creds) != len(targets):
        sys.exit(f"minted {len(creds)} of {len(targets)} credentials")
    return creds


def make_cert(work: Path, kind: str, owner: str, ip: str) -> tuple[Path, Path]:
    """A self-signed certificate for `ip` (and 127.0.0.1), its key readable by `owner`."""
    cert, key = work / "service.crt", work / "service.key"
    newkey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"] if kind == "ec" \
        else ["-newkey", "rsa:3072"]
    subprocess.run(["openssl", "req", "-x509", *newkey, "-nodes", "-days", "2",
                    "-subj", "/CN=jobio-bench", "-addext",
                    f"subjectAltName=IP:{ip},IP:127.0.0.1", "-keyout", str(key),
                    "-out", str(cert)], check=True, capture_output=True)
    os.chown(key, pwd.getpwnam(owner).pw_uid, -1)
    key.chmod(0o400)
    cert.chmod(0o644)
    return cert, key


@contextlib.contextmanager
def login_namespace(name: str = NETNS) -> Iterator[str]:
    """A `login` network namespace linked to the root namespace by a veth pair: the service
    listens on SERVICE_IP (root side), clients run at LOGIN_IP. Removed afterwards."""
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    subprocess.run(["ip", "link", "del", VETH], capture_output=True, check=False)
    for cmd in (["netns", "add", name],
                ["link", "add", VETH, "type", "veth", "peer", "name", "eth0", "netns", name],
                ["addr", "add", f"{SERVICE_IP}/30", "dev", VETH],
                ["link", "set", VETH, "up"],
                ["-n", name, "addr", "add", f"{LOGIN_IP}/30", "dev", "eth0"],
                ["-n", name, "link", "set", "eth0", "up"],
                ["-n", name, "link", "set", "lo", "up"]):
        subprocess.run(["ip", *cmd], check=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "link", "del", VETH], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


class Client:
    """One GET per new connection (TCP, and TLS when https), as a new `jobio` process does."""

    def __init__(self, host: str, port: int, ca: Path | None) -> None:
        self.host, self.port = host, port
        self.context = ssl.create_default_context(cafile=str(ca)) if ca else None

    def get(self, target: str, cred: str) -> tuple[float, float, dict[str, float]]:
        """(latency s, service ms, its parts in ms) of one request: Server-Timing's `app`
        and, for an authenticated request, `prep` (read to queued: the credential), `wait`
        (in the uid's queue of the fair pool) and `run` (in a worker)."""
        t = time.perf_counter()
        conn = (http.client.HTTPSConnection(self.host, self.port, context=self.context,
                                            timeout=60) if self.context
                else http.client.HTTPConnection(self.host, self.port, timeout=60))
        try:
            conn.request("GET", target, headers={"Authorization": f"MUNGE {cred}",
                                                 "Connection": "close"})
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise RuntimeError(f"{target}: HTTP {resp.status}")
            timing = server_timing(resp.getheader("Server-Timing") or "app;dur=0")
        finally:
            conn.close()
        return time.perf_counter() - t, timing.pop("app"), timing


def server_timing(header: str) -> dict[str, float]:
    """`app;dur=5.1, wait;dur=2.0` -> {"app": 5.1, "wait": 2.0}."""
    parts = (m.strip().split(";dur=") for m in header.split(","))
    return {name: float(dur) for name, dur in parts}


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def cpu_seconds(pid: int) -> float:
    """CPU (user + system) of `pid` and its descendants so far (the service under runuser;
    the `unmunge` processes it ran and reaped count too)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total = sum(int(f) for f in fields[11:15]) / tick  # own and waited-for children's
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                total += cpu_seconds(int(child))
    except (OSError, IndexError, ValueError):
        pass
    return total


def load() -> str:
    return "load " + " ".join(Path("/proc/loadavg").read_text().split()[:3])


def client_imports(user: str, jobio: Path, config: Path, job: int) -> None:
    """`python -X importtime` of `jobio JOBID` in client mode: the total, the slowest
    top-level imports, and whether psycopg was imported."""
    code = ("import sys\nfrom slurm_io.cli import main\nsys.argv=['jobio','" + str(job) +
            "']\ntry:\n main()\nexcept SystemExit:\n pass\n"
            "print('psycopg imported:', 'psycopg' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([RUNUSER, "-u", user, "--", str(jobio.parent / "python"),
                           "-X", "importtime", "-c", code],
                          env={"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(config)},
                          capture_output=True, text=True, cwd="/", check=False)
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2]
            rows.append((int(parts[1]), len(name) - len(name.lstrip()), name.strip()))
    top = sorted((r for r in rows if r[1] == 1), reverse=True)
    print(f"client mode imports (-X importtime): {sum(r[0] for r in top) / 1000:.0f} ms in "
          f"all; slowest: " + ", ".join(f"{n} {us / 1000:.0f}" for us, _, n in top[:6]))
    print("client mode:", proc.stderr.strip().splitlines()[-1],
          "(psycopg in the import log:", any("psycopg" in r[2] for r in rows), ")")


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
    ap.add_argument("--tls", choices=("ec", "rsa", "none"), default="ec")
    ap.add_argument("--munge", choices=("lib", "exec"), default="lib")
    ap.add_argument("--no-netns", dest="netns", action="store_false")
    ap.add_argument("--spread", default="", help="comma-separated OS users: after the "
                    "user's own 50 clients, the same clients with these users' requests "
                    "in turn (a site's login nodes; each user has her own fair queue)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root (runs commands as the user and the service account)")
    subprocess.run(["id", SERVICE_ACCOUNT], check=False, capture_output=True).returncode \
        and subprocess.run(["useradd", "-r", "-M", "-s", "/usr/sbin/nologin", SERVICE_ACCOUNT],
                           check=True)
    jobs = prepare(args.dsn, args.user)
    # (the users who own finished jobs: a small database leaves some without)
    spread = [(u, prepare(args.dsn, u, required=False)) for u in args.spread.split(",") if u]
    args.spread_jobs = [(u, theirs) for u, theirs in spread if theirs]
    if args.spread and len(args.spread_jobs) < 2:
        sys.exit(f"--spread: fewer than 2 of {args.spread} own finished jobs")
    jobio = public_venv(args.venv)
    with contextlib.ExitStack() as stack:
        netns = stack.enter_context(login_namespace()) if args.netns else None
        measure(args, jobs, jobio, netns)


def measure(args: argparse.Namespace, jobs: list[int], jobio: Path, netns: str | None) -> None:
    d = conninfo_to_dict(args.dsn)
    user_dsn = make_conninfo("", host=d["host"], port=d.get("port", "5432"), dbname=d["dbname"])
    work = Path(tempfile.mkdtemp(prefix="bench-service-"))
    work.chmod(0o755)
    host = SERVICE_IP if netns else "127.0.0.1"
    port = free_port(host if not netns else "127.0.0.1")
    scheme = "http" if args.tls == "none" else "https"
    url = f"{scheme}://{host}:{port}"
    tls = ""
    cert: Path | None = None
    if args.tls != "none":
        cert, key = make_cert(work, args.tls, SERVICE_ACCOUNT, host)
        tls = f'tls_cert = "{cert}"\ntls_key = "{key}"\n'
    svc_cfg = work / "service.toml"
    svc_cfg.write_text(f'dsn = "{user_dsn}"\n[munge]\nsocket = "{args.munge_socket}"\n'
                       f'[service]\nlisten = "{host}"\nport = {port}\n{tls}'
                       f"threads = {args.threads}\nprocesses = {args.processes}\n")
    client_cfg = work / "client.toml"
    client_cfg.write_text(f'server = "{url}"\n' + (f'server_ca = "{cert}"\n' if cert else "")
                          + f'[munge]\nsocket = "{args.munge_socket}"\n')
    local_cfg = work / "local.toml"
    local_cfg.write_text(f'dsn = "{user_dsn}"\n')
    for p in (svc_cfg, client_cfg, local_cfg):
        p.chmod(0o644)
    munge_env = {"SLURM_IO_MUNGE": args.munge}
    log = open(work / "service.log", "wb")  # noqa: SIM115
    svc = subprocess.Popen([RUNUSER, "-u", SERVICE_ACCOUNT, "--", str(jobio), "serve"],
                           env={"PATH": "/usr/bin:/bin", "SLURM_IO_CONFIG": str(svc_cfg),
                                **munge_env},
                           stdout=log, stderr=subprocess.STDOUT, cwd="/",
                           start_new_session=True)
    client = Client(host, port, cert)
    try:
        for _ in range(300):
            try:
                client.get("/v1/health", "")
                break
            except (OSError, RuntimeError):
                time.sleep(0.1)
        rng = random.Random(1)
        print(f"{len(jobs)} finished jobs of {args.user}; service {url} ({args.tls} TLS, "
              f"munge {args.munge}), {args.processes} process(es) x {args.threads} threads; "
              f"clients {'in netns ' + netns if netns else 'on loopback'}; {load()}")
        for kind, cfg, ns in (("local (peer, direct)", local_cfg, None),
                              ("through the service", client_cfg, netns)):
            walls = [run_as(args.user, jobio, [str(rng.choice(jobs)), "--json"], cfg,
                            netns=ns, env=munge_env)[0] for _ in range(args.n)]
            print(f"jobio JOBID --json, new process, {kind}: median "
                  f"{1000 * statistics.median(walls):.0f} ms, max {1000 * max(walls):.0f} ms"
                  f"; {load()}")
        walls = [run_as(args.user, jobio, ["--version"], client_cfg, netns=netns)[0]
                 for _ in range(args.n)]
        print(f"jobio --version (start-up): median {1000 * statistics.median(walls):.0f} ms")
        client_imports(args.user, jobio, client_cfg, jobs[0])
        # one at a time: the service's own time
        targets = [f"/v1/show?jobid={rng.choice(jobs)}" for _ in range(100)]
        creds = mint(args.user, args.munge_socket, targets)
        serial = [client.get(t, c) for t, c in zip(targets, creds, strict=True)]
        lat = [1000 * s[0] for s in serial]
        app = [s[1] for s in serial]
        print(f"one client, {len(serial)} requests: latency p50 {pct(lat, 50):.1f} ms, p99 "
              f"{pct(lat, 99):.1f} ms; service time p50 {pct(app, 50):.1f} ms, p99 "
              f"{pct(app, 99):.1f} ms; {load()}")
        concurrent(args, client, jobs, rng, svc.pid)
        if args.spread_jobs:
            concurrent(args, client, jobs, rng, svc.pid, args.spread_jobs)
    finally:
        os.killpg(svc.pid, 15)
        svc.wait(timeout=30)
        log.close()
        shutil.rmtree(work, ignore_errors=True)


class Requests:
    """Pre-minted (target, credential) pairs that client threads take one at a time until a
    deadline: credentials are minted before anything is measured."""

    def __init__(self, targets: list[str], creds: list[str], stop: float) -> None:
        self._it = iter(zip(targets, creds, strict=True))
        self._lock = threading.Lock()
        self.stop = stop

    def next(self) -> tuple[str, str] | None:
        """The next request, or None once the deadline passed or none is left."""
        if time.perf_counter() >= self.stop:
            return None
        with self._lock:
            return next(self._it, None)


def concurrent(args: argparse.Namespace, client: Client, jobs: list[int],
               rng: random.Random, service_pid: int,
               spread: list[tuple[str, list[int]]] | None = None) -> None:
    """args.clients threads, each sending one request after the other for args.seconds; the
    requests are the user's (args.user, `jobs`), or with `spread` (user, their jobs) each
    user's in turn, as the login nodes of a site send them."""
    owners = spread or [(args.user, jobs)]
    n = int(args.clients * args.seconds * 8)
    t = time.perf_counter()
    per_user = []
    for user, theirs in owners:
        targets = [f"/v1/show?jobid={rng.choice(theirs)}" for _ in range(-(-n // len(owners)))]
        per_user.append(list(zip(targets, mint(user, args.munge_socket, targets), strict=True)))
    mixed = [pair for turn in zip(*per_user, strict=True) for pair in turn]
    print(f"({len(mixed)} credentials minted in {time.perf_counter() - t:.1f} s)")
    results: list[tuple[float, float, dict[str, float]]] = []
    lock = threading.Lock()
    requests = Requests([p[0] for p in mixed], [p[1] for p in mixed],
                        time.perf_counter() + args.seconds)

    def run() -> None:
        while (nxt := requests.next()) is not None:
            r = client.get(*nxt)
            with lock:
                results.append(r)

    before = load()
    t = time.perf_counter()
    cpu = time.process_time(), cpu_seconds(service_pid)
    threads = [threading.Thread(target=run) for _ in range(args.clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t
    own, svc = time.process_time() - cpu[0], cpu_seconds(service_pid) - cpu[1]
    lat = [1000 * r[0] for r in results]
    app = [r[1] for r in results]
    who = f" of {len(owners)} users" if spread else ""
    print(f"{args.clients} concurrent clients{who}, {elapsed:.1f} s: {len(results)} requests, "
          f"{len(results) / elapsed:.0f} req/s; latency p50 {pct(lat, 50):.0f} ms, p99 "
          f"{pct(lat, 99):.0f} ms; service time p50 {pct(app, 50):.1f} ms, p99 "
          f"{pct(app, 99):.1f} ms; {before} before, {load()} after")
    parts = {k: [r[2].get(k, 0.0) for r in results] for k in ("prep", "wait", "run")}
    print(f"service time's parts{who}: " + "; ".join(
        f"{k} p50 {pct(v, 50):.1f} ms, p99 {pct(v, 99):.1f} ms" for k, v in parts.items()))
    print(f"CPU per request{who}: service process(es) {1000 * svc / len(results):.1f} ms, the "
          f"benchmark's clients {1000 * own / len(results):.1f} ms (PostgreSQL and munged "
          f"not counted)")


if __name__ == "__main__":
    main()
