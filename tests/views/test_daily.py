"""`jobio daily`: files, plots that show something, links, mail."""

from __future__ import annotations

import email
import email.policy
import re
from datetime import date
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from PIL import Image

from slurm_io.cli import main
from slurm_io.report import daily
from tests.views import data

DAY = date(2026, 11, 18)


def assert_not_blank(path: Path, min_size: tuple[int, int] = (800, 400)) -> None:
    with Image.open(path) as im:
        assert im.size[0] >= min_size[0] and im.size[1] >= min_size[1], im.size
        colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None
    assert len(colours) > 20, f"{path.name}: {len(colours)} colours"
    # not all white: at least 3 % of the pixels carry ink
    white = sum(n for n, c in colours if c == (255, 255, 255))
    assert white < 0.97 * sum(n for n, _ in colours), path.name


@pytest.fixture(scope="module")
def report(views_dsn, tmp_path_factory):
    out = tmp_path_factory.mktemp("daily") / "out"
    with psycopg.connect(views_dsn) as conn:
        return daily.build(conn, DAY, out, now=data.DAY + 2 * 86400)


def test_report_files_and_links(report):
    html = report.index.read_text()
    assert [p.name for p in report.pngs] == list(daily.PNGS)
    for png in daily.PNGS:
        assert (report.out / png).is_file()
        assert f'src="{png}"' in html
    links = set(re.findall(r'href="(jobs/[^"]+)"', html))
    assert "jobs/101.html" in links and "jobs/102.html" in links and "jobs/103.html" in links
    for link in links:
        page = (report.out / link).read_text()
        assert "jobio show" in page and "../index.html" in page
    assert "LASSi hours" in (report.out / "jobs/101.html").read_text()
    # the riskiest-jobs table starts with the storm, users are listed
    risky = html.split("Riskiest jobs")[1].split("</table>")[0]
    assert re.search(r"<tr><td[^>]*><a href=\"jobs/101.html\">101</a>", risky)
    assert "carol" in html.split("Top users")[1]


def test_plots_are_not_blank(report):
    for png in report.pngs:
        assert_not_blank(png)


def test_heatmap_counts_use_log_bins(views_dsn):
    start, end = daily.lassi_days.day_bounds(DAY)
    with psycopg.connect(views_dsn) as conn:
        c = daily.heatmap_counts(conn, start, end, 120.0, base=4.0)
    b = int((start + 10.5 * 3600) // 120)  # 10:30-10:32
    # write rate per series: bob 10000 x 4 KiB / 120 s = 341 kB/s: [4^9, 4^10); carol's job
    # 41000 MiB / 120 s = 358 MB/s: 4^14; gina 100 MiB: 874 kB/s: 4^9; frank's `:2006:n07`
    # 500 MiB: 4.4 MB/s and carol's `:2003:n03` 1000 MiB: 8.7 MB/s: both 4^11 (ids naming
    # no job are series of their own: the heat map shows what the collectors saw)
    got = {k: n for (bb, k), n in c["write"].items() if bb == b}
    assert got == {9: 2, 11: 2, 14: 1}


def test_daily_cli_and_mail(views_dsn, tmp_path):
    from aiosmtpd.controller import Controller

    received = []

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            received.append(email.message_from_bytes(envelope.content,
                                                     policy=email.policy.default))
            return "250 OK"

    ctl = Controller(Handler(), hostname="127.0.0.1", port=_free_port())
    ctl.start()
    try:
        cfg = tmp_path / "config.toml"
        cfg.write_text(f'[mail]\nsmtp_host = "127.0.0.1"\nsmtp_port = {ctl.port}\n'
                       'from = "io-staff@example.org"\n')
        r = CliRunner().invoke(main, ["--config", str(cfg), "--dsn", views_dsn, "daily",
                                      "--date", "2026-11-18", "--out", str(tmp_path / "d"),
                                      "--mail-to", "staff@example.org"])
    finally:
        ctl.stop()
    assert r.exit_code == 0, r.output
    assert "daily report of 2026-11-18" in r.stdout and "mailed to staff@example.org" in r.stdout
    (msg,) = received
    assert msg["Subject"] == "slurm-io daily report 2026-11-18"
    assert msg["From"] == "io-staff@example.org"
    images = [p for p in msg.walk() if p.get_content_type() == "image/png"]
    assert len(images) == 4
    html = next(p for p in msg.walk() if p.get_content_type() == "text/html").get_content()
    assert html.count('src="cid:') == 4


def test_a_refused_daily_mail_is_one_line_and_exit_1(views_dsn, tmp_path):
    """The daily mail goes through notify.smtp like every mail: a recipient the server
    refuses ends the command with one line naming the server and the refusal."""
    from aiosmtpd.controller import Controller

    class Refusing:
        async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
            return "550 5.1.1 no such user here"

    ctl = Controller(Refusing(), hostname="127.0.0.1", port=_free_port())
    ctl.start()
    try:
        cfg = tmp_path / "config.toml"
        cfg.write_text(f'[mail]\nsmtp_host = "127.0.0.1"\nsmtp_port = {ctl.port}\n')
        r = CliRunner().invoke(main, ["--config", str(cfg), "--dsn", views_dsn, "daily",
                                      "--date", "2026-11-18", "--out", str(tmp_path / "d"),
                                      "--mail-to", "staff@example.org"])
    finally:
        ctl.stop()
    assert r.exit_code == 1, r.output
    assert r.stderr.splitlines()[-1] == (f"mail not sent: 127.0.0.1:{ctl.port}: RCPT "
                                         "TO:<staff@example.org> refused: 550 5.1.1 no such "
                                         "user here")
    assert "Traceback" not in r.output


def test_mail_is_skipped_without_a_host(views_dsn, tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[mail]\nhost = ""\n')
    r = CliRunner().invoke(main, ["--config", str(cfg), "--dsn", views_dsn, "daily", "--date",
                                  "2026-11-18", "--out", str(tmp_path / "d"), "--mail-to",
                                  "staff@example.org"])
    assert r.exit_code == 0, r.output
    assert "mail not sent: no [mail] host configured" in r.stderr


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

