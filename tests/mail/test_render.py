"""The HTML part as a browser draws it: headless Chromium renders it to a PNG, and Pillow
checks that the picture is a report (not blank, many colours, the timeline's bars there).

Chromium comes from Debian (scripts/setup.sh installs it with SLURM_IO_EXTRAS=test). Without
it the test is skipped on a developer's machine and fails in CI ($CI set), where set-up must
have installed it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from PIL import Image

from slurm_io.config import Config
from slurm_io.mail.builder import MailBuilder, html_part
from slurm_io.mail.view import READ_COLOUR, WRITE_COLOUR
from tests import needs
from tests.mail.conftest import NOW
from tests.mail.reports import healthy_streamer, typed

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH, HEIGHT = 900, 1400

pytestmark = needs.program("chromium", "chromium-browser")


def screenshot(html: str, tmp: Path) -> Image.Image:
    page, png = tmp / "mail.html", tmp / "mail.png"
    page.write_text(html, encoding="utf-8")
    argv = [str(CHROMIUM), "--headless", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", f"--user-data-dir={tmp / 'profile'}",
            f"--screenshot={png}", f"--window-size={WIDTH},{HEIGHT}", page.as_uri()]
    if os.geteuid() == 0:
        argv.insert(1, "--no-sandbox")
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)
    assert png.exists(), f"chromium made no PNG ({proc.returncode}): {proc.stderr[-2000:]}"
    return Image.open(png).convert("RGB")


def _hex(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def _near(counts: dict[tuple[int, int, int], int], colour: str, tol: int = 8) -> int:
    r, g, b = _hex(colour)
    return sum(n for (x, y, z), n in counts.items()
               if abs(x - r) <= tol and abs(y - g) <= tol and abs(z - b) <= tol)


def _check(img: Image.Image) -> dict[str, int]:
    assert img.size == (WIDTH, HEIGHT)
    counts: dict[tuple[int, int, int], int] = {}
    for n, c in img.getcolors(maxcolors=WIDTH * HEIGHT):
        counts[c] = n
    total = WIDTH * HEIGHT
    white = sum(n for c, n in counts.items() if min(c) >= 245)
    assert white < 0.85 * total, "mostly white"
    assert len(counts) > 200, f"only {len(counts)} colours"  # text is anti-aliased
    # the bars of the timeline, below the header and its two-colour stripe
    body = img.crop((0, 200, WIDTH, HEIGHT))
    body_counts = {c: n for n, c in body.getcolors(maxcolors=WIDTH * HEIGHT)}
    found = {"read": _near(body_counts, READ_COLOUR), "write": _near(body_counts, WRITE_COLOUR),
             "header": _near(counts, "#0f172a", 2)}
    assert found["header"] > 10_000, found  # the dark header band
    return found


def test_a_hand_made_report_renders_with_its_chart(tmp_path):
    b = MailBuilder(Config(), lookup=lambda job: None)
    html = html_part(b.message(typed(healthy_streamer()), to=["alice@example.org"]))
    found = _check(screenshot(html, tmp_path))
    # 30 two-minute bins in 5-minute rows: 12 rows of bars on each side
    assert found["read"] > 3_000 and found["write"] > 3_000, found


@pytest.mark.pg
def test_a_simulated_jobs_mail_renders_with_its_chart(sim_jobs, tmp_path):
    b = MailBuilder(Config(mail_policy="all"), lookup=lambda job: None, clock=lambda: NOW)
    with psycopg.connect(sim_jobs.dsn) as conn:
        msg = b.build(conn, sim_jobs.healthy)
    assert msg is not None
    img = screenshot(html_part(msg), tmp_path)
    img.save(tmp_path / "kept.png")
    found = _check(img)
    assert found["read"] + found["write"] > 1_000, found
