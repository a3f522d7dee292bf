"""The web view's admin pages (issue 22): carol, in the admin group, gets the live top and
a day's report through `jobio serve`, with everyone's jobs (her database role is an
admin's); alice, not in it, is refused the pages, and the service would give her only her
own load anyway (row-level security)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta

import psycopg
import pytest

from tests import needs
from tests.site.conftest import Site
from tests.site.test_service import Service, started_service
from tests.site.test_web import (  # noqa: F401  (fixtures)
    NOW,
    Web,
    alice_web,
    browser,
    jobio_web,
    rows,
    shot,
    web_site,
)
from tests.web.browser import Browser

pytestmark = [pytest.mark.pg, needs.root("runs jobio web as carol and alice"),
              needs.program("chromium", "chromium-browser")]
DAY = (NOW - timedelta(days=1)).date()


@pytest.fixture(scope="module")
def lassi_day(web_site: Site) -> date:  # noqa: F811
    """LASSi hours of DAY for alice's 9102 and bob's 9301, as `jobio daily` stores them."""
    hour = f"{DAY.isoformat()}T10:00:00+00"
    with psycopg.connect(web_site.superuser_dsn) as conn:
        conn.execute(
            "INSERT INTO lassi_job_hour (hour, fs, job, uid, read_kb, read_ops, risk_oss, "
            "risk_mds, risks) SELECT %s, 'scratch', job, uid, 1e6, 1e3, r, -0.5, '{}' "
            "FROM (VALUES (9102, 1.5), (9301, 0.25)) v(k, r) JOIN job ON job.job = v.k",
            (hour,))
        conn.execute("INSERT INTO lassi_fs_hour (hour, fs, read_kb, risk_oss, risk_mds, "
                     "risks, n_jobs) VALUES (%s, 'scratch', 2e6, 0.1, -0.2, '{}', 2)", (hour,))
    return DAY


@pytest.fixture(scope="module")
def service(web_site: Site) -> Iterator[Service]:  # noqa: F811
    """This module's own (the site's directory is the session's: test_web.py's service
    has its files there already)."""
    with started_service(web_site, "web-admin-service") as started:
        yield started


@pytest.fixture(scope="module")
def carol_web(web_site: Site, service: Service) -> Iterator[Web]:  # noqa: F811
    with jobio_web(web_site, "carol", service.client) as web:
        yield web


def test_an_admin_gets_the_live_top_and_the_daily_report(
        carol_web: Web, lassi_day: date, browser: Browser,  # noqa: F811
        web_site: Site) -> None:  # noqa: F811
    browser.open(carol_web.address)
    links = browser.js("[...document.querySelectorAll('header nav a')].map(a => a.innerText)")
    assert links == ["My jobs", "Top", "Daily report"]
    assert rows(browser) == []  # carol's own jobs: none
    browser.press_enter_on("header nav a[href$='/admin/top']")
    text = browser.js("document.getElementById('top').innerText")
    assert "9150" in text and "alice" in text  # alice's running job, the newest interval
    browser.press_enter_on("a[href*='by=user']")
    keys = browser.js("[...document.querySelectorAll('#top tbody th')].map(t => t.innerText)")
    assert keys[0] == "alice"
    shot(browser, web_site, "web-admin-top.png")
    browser.open(f"{carol_web.root}/admin/daily?date={lassi_day.isoformat()}")
    risky = browser.js("[...document.querySelectorAll('#by_risk tbody th')]"
                       ".map(t => t.innerText)")
    assert risky == ["9102", "9301"]  # everyone's jobs, riskiest first
    assert "scratch" in browser.js("document.getElementById('by-fs').innerText")
    users = browser.js("[...document.querySelectorAll('#users tbody th')]"
                       ".map(t => t.innerText)")
    assert sorted(users) == ["alice", "bob"]
    shot(browser, web_site, "web-admin-daily.png")


def test_a_user_outside_the_admin_group_is_refused_the_admin_pages(
        alice_web: Web, browser: Browser) -> None:  # noqa: F811
    browser.open(alice_web.address)
    links = browser.js("[...document.querySelectorAll('header nav a')].map(a => a.innerText)")
    assert links == ["My jobs"]
    browser.open(f"{alice_web.root}/admin/top")
    assert "for the slurmio-admin group" in browser.js("document.body.innerText")
    browser.open(f"{alice_web.root}/admin/daily")
    assert "for the slurmio-admin group" in browser.js("document.body.innerText")
