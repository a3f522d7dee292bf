"""The web view as its users meet it (issue 22): `jobio web` started by two real
unprivileged OS users -- alice reading through `jobio serve` (MUNGE), bob through the database
as his own role (a site without the service) -- and headless Chromium driven by keyboard:
each sees their own jobs and not the other's, sorting and filters work, the job page's
charts are drawn (their pixels counted in the screenshot), a running job's page updates
while it runs, and a wrong token is refused.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from PIL import Image

from slurm_io.model import IdClass
from slurm_io.web import chart
from tests import needs
from tests.privacy.privacy_db import RUNUSER
from tests.site.conftest import Site
from tests.site.services import stop_session
from tests.site.test_service import Service, started_service
from tests.web.browser import Browser

pytestmark = [pytest.mark.pg, needs.root("runs jobio web as alice and bob"),
              needs.program("chromium", "chromium-browser")]
# where the screenshots go besides the test's directory: docs/web-*.png are made this way
SHOTS = os.environ.get("SLURM_IO_WEB_SHOTS")
NOW = datetime.now(UTC).replace(microsecond=0)
OSTS = ("scratch-OST0001", "scratch-OST0002", "scratch-OST0003")
# key -> (owner, name, start before now, hours run (None: running), what it does)
WEB_JOBS = {
    9101: ("alice", "hammer-meta", timedelta(days=2), 3, "meta"),
    9102: ("alice", "bigread", timedelta(days=1), 1, "read"),
    9103: ("alice", "post", timedelta(hours=30), 2, "write"),
    9150: ("alice", "live-writer", timedelta(minutes=30), None, "small"),
    9301: ("bob", "bob-secret", timedelta(days=1), 2, "read"),
}


def _deltas(conn: psycopg.Connection, job: int, uid: int, start: datetime, end: datetime,
            kind: str, targets: dict[str, int], host: int) -> None:
    """One delta every 2 minutes on each OST (and the MDT for metadata), as collectors store
    them: `kind` decides the job's pattern."""
    t = start + timedelta(minutes=2)
    rows = []
    while t <= end:
        for k, ost in enumerate(OSTS):
            rb = (8 << 20) * (k + 1) if kind == "read" else 0
            wb = {"write": (4 << 20) * (k + 1), "small": 2000 * 4096}.get(kind, 0)
            ws = {"write": 4 * (k + 1), "small": 2000}.get(kind, 0)
            rows.append((t - timedelta(minutes=2), t, targets[ost], job, uid, host,
                         f"{job}:{uid}:node01", rb, rb // (1 << 20), wb, ws, 0))
        if kind == "meta":
            rows.append((t - timedelta(minutes=2), t, targets["scratch-MDT0000"], job, uid,
                         host, f"{job}:{uid}:node01", 0, 0, 0, 0, 50_000))
        t += timedelta(minutes=2)
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO jobstats_delta (ts_start, ts_end, target_id, id_class, job, uid, "
            "host_id, raw_id, read_bytes, read_bytes_samples, write_bytes, "
            "write_bytes_samples, op_getattr) VALUES "
            f"(%s, %s, %s, {int(IdClass.EXACT)}, %s, %s, %s, %s, %s, %s, %s, %s, %s)", rows)


def _targets(conn: psycopg.Connection) -> dict[str, int]:
    return dict(conn.execute("SELECT name, target_id FROM fs_target").fetchall())


@pytest.fixture(scope="module")
def web_site(site: Site, uids: dict[str, int]) -> Site:
    """WEB_JOBS of the last days (and the privacy fixture's never-ended jobs ended)."""
    from slurm_io.store import partitions

    with psycopg.connect(site.superuser_dsn) as conn:
        partitions.ensure_partitions(conn, (NOW - timedelta(days=3)).timestamp(),
                                     (NOW + timedelta(days=1)).timestamp(), ahead_days=0)
        with conn.transaction():
            conn.execute("UPDATE job SET end_time = start_time + interval '1 day', "
                         "state = 'COMPLETED' WHERE end_time IS NULL")
            for name in (*OSTS, "scratch-MDT0000"):
                conn.execute("INSERT INTO fs_target (name, fs, kind, idx) VALUES "
                             "(%s, 'scratch', %s, %s)", (name, name[8:11], int(name[-1])))
            targets = _targets(conn)
            host = conn.execute("SELECT host_id FROM host WHERE name = 'node01'").fetchone()
            assert host is not None
            for job, (owner, name, ago, hours, kind) in WEB_JOBS.items():
                start = NOW - ago
                end = None if hours is None else start + timedelta(hours=hours)
                conn.execute(
                    "INSERT INTO job (job, jobid, uid, user_name, account, partition, name, "
                    "nodes, start_time, end_time, state, exit_code, work_dir, source) VALUES "
                    "(%s, %s, %s, %s, %s, 'batch', %s, '{node01}', %s, %s, %s, '0:0', %s, "
                    "'test')", (job, str(job), uids[owner], owner,
                                "chem" if job == 9103 else "proj", name, start, end,
                                "RUNNING" if end is None else "COMPLETED", f"/home/{owner}"))
                conn.execute("INSERT INTO job_node (host_id, job, uid, start_time, end_time) "
                             "VALUES (%s, %s, %s, %s, %s)", (host[0], job, uids[owner], start,
                                                             end))
                _deltas(conn, job, uids[owner], start, end or NOW - timedelta(minutes=2), kind,
                        targets, host[0])
    return site


class Web:
    """`jobio web` running as an OS user: its address (with the token) and its process."""

    def __init__(self, proc: subprocess.Popen[str], address: str) -> None:
        self.proc, self.address = proc, address
        m = re.match(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)$", address)
        assert m, address
        self.root, self.token = m.group(1), m.group(2)


@contextmanager
def jobio_web(site: Site, user: str, config: Path) -> Iterator[Web]:
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "SLURM_IO_CONFIG": str(config),
           "HOME": f"/home/{user}" if Path(f"/home/{user}").is_dir() else "/tmp"}
    proc = subprocess.Popen([RUNUSER, "-u", user, "--", str(site.jobio), "web", "--refresh",
                             "2", "--cache", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd="/",
                            start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("jobio web: open "), (line, proc.stderr and proc.stderr.read())
        yield Web(proc, line.split("open ", 1)[1].strip())
    finally:
        stop_session(proc)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def service(web_site: Site) -> Iterator[Service]:
    with started_service(web_site, "web-service") as started:
        yield started


@pytest.fixture(scope="module")
def alice_web(web_site: Site, service: Service) -> Iterator[Web]:
    with jobio_web(web_site, "alice", service.client) as web:
        yield web


@pytest.fixture(scope="module")
def bob_web(web_site: Site) -> Iterator[Web]:
    config = web_site.config("bob-local", f'dsn = "{web_site.user_dsn}"\n')
    with jobio_web(web_site, "bob", config) as web:
        yield web


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    b = Browser(tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


def shot(b: Browser, site: Site, name: str) -> Image.Image:
    path = site.dir / name
    img = b.screenshot(path)
    if SHOTS:
        shutil.copy(path, Path(SHOTS) / name)
    return img


def rows(b: Browser) -> list[str]:
    return b.js("[...document.querySelectorAll('#jobs tbody tr[data-jobid]')]"
                ".map(r => r.dataset.jobid)")


def test_each_user_sees_their_own_jobs_and_not_the_others(alice_web: Web, bob_web: Web,
                                                          browser: Browser) -> None:
    browser.open(alice_web.address)
    assert browser.js("location.search") == ""  # the token left the address for a cookie
    assert rows(browser) == ["9150", "9102", "9103", "9101"]  # running first, then newest
    assert "bob-secret" not in browser.js("document.body.innerText")
    marked = browser.js("[...document.querySelectorAll('#jobs tbody tr')].filter(r => "
                        "r.querySelector('.mark')).map(r => r.dataset.jobid)")
    assert set(marked) == {"9150", "9101"}  # small writes; heavy metadata
    assert "advice: " in browser.js("document.querySelector('tr[data-jobid=\"9101\"]')"
                                    ".innerText") or browser.js(
        "document.querySelector('tr[data-jobid=\"9101\"] .sr').textContent").startswith(
        "advice")
    browser.open(bob_web.address)
    assert rows(browser) == ["9301"]
    browser.open(f"{bob_web.root}/job/9101")  # alice's job: like one that does not exist
    assert "no such job" in browser.js("document.body.innerText")
    browser.open(f"{bob_web.root}/job/9301")
    assert "bob-secret" in browser.js("document.querySelector('h1').innerText")


def test_sort_and_filters_work_by_keyboard(alice_web: Web, browser: Browser) -> None:
    browser.open(alice_web.address)
    browser.press_enter_on("a[data-sort=read]")
    assert rows(browser)[:2] == ["9102", "9150"] or rows(browser)[0] == "9102"
    assert browser.js("document.querySelector('a[data-sort=read]').parentElement"
                      ".getAttribute('aria-sort')") == "descending"
    browser.press_enter_on("a[data-sort=read]")  # again: ascending, the biggest last
    assert rows(browser)[-1] == "9102"
    browser.press_enter_on("a[data-sort=meta]")
    assert rows(browser)[0] == "9101"
    browser.press_enter_on("a[data-sort=written]")
    assert rows(browser)[:2] == ["9103", "9150"]
    browser.press_enter_on("a[data-sort=size]")  # the smallest requests: 4 KiB writes
    browser.press_enter_on("a[data-sort=size]")
    assert rows(browser)[0] == "9150"
    browser.type_into("#f-name", "READ")
    browser.press_enter_on("#f-name")  # Enter in a field submits the form
    assert rows(browser) == ["9102"]
    browser.type_into("#f-name", "")
    browser.js("document.getElementById('f-account').value = 'chem'")
    browser.press_enter_on("button[type=submit]")
    assert rows(browser) == ["9103"]
    browser.js("document.getElementById('f-account').value = ''")
    browser.js("document.getElementById('f-state').value = 'RUNNING'")
    browser.press_enter_on("button[type=submit]")
    assert rows(browser) == ["9150"]


def _colour_pixels(img: Image.Image, colour: str, tol: int = 10) -> int:
    r, g, b = int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)
    return sum(n for n, (x, y, z) in img.getcolors(maxcolors=img.width * img.height) or []
               if abs(x - r) <= tol and abs(y - g) <= tol and abs(z - b) <= tol)


def test_the_job_pages_charts_are_drawn(alice_web: Web, browser: Browser,
                                        web_site: Site) -> None:
    browser.open(alice_web.address)
    shot(browser, web_site, "web-myjobs.png")
    browser.press_enter_on("a[href$='/job/9102']")  # from the list, by keyboard
    page = shot(browser, web_site, "web-job.png")
    rates = page.crop(browser.rect("#rates"))
    assert rates.width > 500 and rates.height > 100
    assert _colour_pixels(rates, chart.READ) > 2000  # an hour of reads drawn as bars
    assert _colour_pixels(rates, chart.WRITE) == 0  # it wrote nothing
    ost = page.crop(browser.rect("#ost"))
    assert _colour_pixels(ost, chart.READ) > 1000
    assert browser.js("document.querySelectorAll('#ost svg text').length") >= 6  # 3 OSTs
    browser.open(f"{alice_web.root}/job/9101")
    meta = shot(browser, web_site, "web-job-meta.png").crop(browser.rect("#meta"))
    assert _colour_pixels(meta, chart.META) > 2000
    assert "Heavy metadata load" in browser.js("document.body.innerText")


def _written(b: Browser) -> str:
    return b.js("[...document.querySelectorAll('#live table.figures tr')].find(r => "
                "r.querySelector('th').innerText === 'Written').querySelector('td').innerText")


def test_a_running_jobs_page_updates(alice_web: Web, browser: Browser, web_site: Site,
                                     uids: dict[str, int]) -> None:
    browser.open(alice_web.address)  # the token, for the cookie
    browser.open(f"{alice_web.root}/job/9150")
    assert "running" in browser.js("document.querySelector('#live .status').innerText")
    before = _written(browser)
    with psycopg.connect(web_site.superuser_dsn) as conn:
        host = conn.execute("SELECT host_id FROM host WHERE name = 'node01'").fetchone()
        assert host is not None
        now = datetime.now(UTC)
        _deltas(conn, 9150, uids["alice"], now - timedelta(minutes=10), now, "small",
                _targets(conn), host[0])
    deadline = time.monotonic() + 30
    while _written(browser) == before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _written(browser) != before, before
    assert browser.js("document.getElementById('live').dataset.updated")  # by its script
    shot(browser, web_site, "web-job-running.png")


def _get(url: str, cookie: str | None = None) -> tuple[int, dict[str, str], str]:
    req = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def test_a_wrong_or_missing_token_is_refused(alice_web: Web) -> None:
    assert _get(f"{alice_web.root}/")[0] == 403
    assert _get(f"{alice_web.root}/job/9101")[0] == 403
    assert _get(f"{alice_web.root}/?token=wrong")[0] == 403
    assert _get(f"{alice_web.root}/", cookie="jobio_web=wrong")[0] == 403
    assert _get(f"{alice_web.root}/static/app.js")[0] == 403
    status, headers, _ = _get(alice_web.address)
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    status, headers, body = _get(f"{alice_web.root}/", cookie=cookie.split(";")[0])
    assert status == 200 and "hammer-meta" in body
    many = "&".join(f"x{k}=1" for k in range(60))
    assert _get(f"{alice_web.root}/?{many}", cookie=cookie.split(";")[0])[0] == 400
    assert _get(f"{alice_web.root}/job/1%0a", cookie=cookie.split(";")[0])[0] == 404
    assert "default-src 'none'" in headers["Content-Security-Policy"]


OOD_SERVER = """
import importlib.util, sys
from wsgiref.simple_server import make_server
# as Passenger's wsgi loader loads it (a module from a file; sys.argv stays the loader's)
spec = importlib.util.spec_from_file_location("passenger_wsgi", "passenger_wsgi.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
app = module.application
base = "/pun/sys/jobio"
def mounted(environ, start_response):  # as OOD's nginx mounts the app
    path = environ.get("PATH_INFO", "")
    if not path.startswith(base):
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not here"]
    environ["SCRIPT_NAME"], environ["PATH_INFO"] = base, path[len(base):] or "/"
    return app(environ, start_response)
with make_server("127.0.0.1", int(sys.argv[1]), mounted) as s:
    print("ready", flush=True)
    s.serve_forever()
"""


def test_the_ood_app_serves_its_user_under_the_ood_path(web_site: Site) -> None:
    """ood/ installed as docs/web.md says, its passenger_wsgi.py loaded by a WSGI server
    as bob (Passenger's part), mounted at /pun/sys/jobio: bob's jobs, links under the
    mount, no token (OOD authenticated him)."""
    from tests.site.services import free_port

    app_dir = web_site.dir / "ood-apps-sys-jobio"
    shutil.copytree(Path(__file__).resolve().parents[2] / "ood", app_dir)
    for p in [app_dir, *app_dir.iterdir()]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    config = web_site.config("bob-ood", f'dsn = "{web_site.user_dsn}"\n')
    port = free_port()
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "SLURM_IO_CONFIG": str(config),
           "SLURM_IO_PYTHON": str(web_site.jobio.parent / "python3")}
    server = web_site.dir / "ood_server.py"  # Passenger's part: load, mount, serve
    server.write_text(OOD_SERVER)
    server.chmod(0o644)
    # the system's Python, as Passenger's: passenger_wsgi.py re-executes the server with
    # $SLURM_IO_PYTHON, the installation's
    proc = subprocess.Popen([RUNUSER, "-u", "bob", "--", "/usr/bin/python3", str(server),
                             str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, cwd=str(app_dir), start_new_session=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready", proc.stderr and proc.stderr.read()
        status, _, body = _get(f"http://127.0.0.1:{port}/pun/sys/jobio/")
        assert status == 200, body
        assert "bob-secret" in body and "hammer-meta" not in body
        assert 'href="/pun/sys/jobio/job/9301"' in body
        assert 'href="/pun/sys/jobio/static/app.css"' in body
        status, _, body = _get(f"http://127.0.0.1:{port}/pun/sys/jobio/job/9101")
        assert status == 404 and "no such job" in body  # alice's
    finally:
        stop_session(proc)  # type: ignore[arg-type]


def test_one_page_is_one_service_request(alice_web: Web, service: Service,
                                         web_site: Site) -> None:
    """Light on the service: a page, its stylesheet and script cost one request (the list:
    `/v1/jobs`, a job: `/v1/show`), as the service's own log counts them."""
    log = web_site.dir / "web-service" / "service.log"

    def asked(path: str) -> int:
        return log.read_text(errors="replace").count(f"GET {path} uid=")

    _, headers, _ = _get(alice_web.address)
    cookie = headers["Set-Cookie"].split(";")[0]
    time.sleep(1.5)  # past this test web's cache (--cache 1)
    jobs, show = asked("/v1/jobs"), asked("/v1/show")
    for path in ("/", "/static/app.css", "/static/app.js"):
        assert _get(f"{alice_web.root}{path}", cookie=cookie)[0] == 200
    time.sleep(0.5)  # the log line is written after the answer
    assert (asked("/v1/jobs"), asked("/v1/show")) == (jobs + 1, show)
    assert _get(f"{alice_web.root}/job/9102", cookie=cookie)[0] == 200
    time.sleep(0.5)
    assert (asked("/v1/jobs"), asked("/v1/show")) == (jobs + 1, show + 1)
