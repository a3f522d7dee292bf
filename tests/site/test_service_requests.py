"""The service's pure parts: every parameter parsed into a typed request (one table), the
log's escaping, and the fair pool's turn order. No server, no database."""

from __future__ import annotations

import threading

import pytest

from slurm_io.service.app import log_text
from slurm_io.service.fair import Busy, FairPool
from slurm_io.service.requests import (
    BadRequest,
    DailyRequest,
    JobsRequest,
    MailRequest,
    ReportRequest,
    ShowRequest,
    TopRequest,
    UsageRequest,
    parse,
)

OK = [
    ("/v1/show", "GET", "jobid=8101&jobid=8200_2&jobid=8101",
     ShowRequest(("8101", "8200_2"), None, None, None, None)),
    ("/v1/show", "GET", "jobid=8101.batch&clusters=c1,c2",
     ShowRequest(("8101.batch",), None, None, None, "c1,c2")),
    ("/v1/show", "GET", "user=alice&start=1712131200.0&end=1712134800",
     ShowRequest((), "alice", 1712131200.0, 1712134800.0, None)),
    ("/v1/show", "GET", f"jobid={2**63 - 1}", ShowRequest((str(2**63 - 1),), None, None, None,
                                                          None)),
    ("/v1/report", "GET", "jobid=8200", ReportRequest("8200", None)),
    ("/v1/mail", "GET", "", MailRequest(None, None)),
    ("/v1/mail", "GET", "user=1001", MailRequest("1001", None)),
    ("/v1/mail", "POST", "enabled=false&user=bob", MailRequest("bob", False)),
    ("/v1/usage", "GET", "start=0&end=10&attribution=1", UsageRequest(0.0, 10.0, True)),
    ("/v1/usage", "GET", "", UsageRequest(None, None, False)),
    ("/v1/jobs", "GET", "", JobsRequest(None, None, None)),
    ("/v1/jobs", "GET", "user=alice&start=0&end=2678400", JobsRequest("alice", 0.0, 2678400.0)),
    ("/v1/top", "GET", "", TopRequest("job", "write")),
    ("/v1/top", "GET", "by=account&sort=meta_ops", TopRequest("account", "meta_ops")),
    ("/v1/daily", "GET", "date=2026-11-24", DailyRequest("2026-11-24")),
]

BAD = [
    ("/v1/show", "GET", f"jobid={2**63}", "not a job id"),
    ("/v1/show", "GET", f"jobid=1_{2**63}", "not a job id"),
    ("/v1/show", "GET", "jobid=1%0A", "not a job id: '1\\n'"),
    ("/v1/show", "GET", "jobid=", "not a job id"),
    ("/v1/show", "GET", "", "give jobid=..., or user=..."),
    ("/v1/show", "GET", "user=a%00b", "user: not a name"),
    ("/v1/show", "GET", "user=", "user: not a name"),
    ("/v1/show", "GET", "user=a&user=b", "user= given 2 times"),
    ("/v1/show", "GET", "jobid=1&clusters=x%00", "clusters: not a name"),
    ("/v1/show", "GET", "user=a&start=nan", "start: not a number"),
    ("/v1/show", "GET", "user=a&start=-inf", "start: not a number"),
    ("/v1/show", "GET", "user=a&end=1e18", "end: not a number"),
    ("/v1/show", "GET", "user=a&end=-1", "end: not a number"),
    ("/v1/show", "GET", "user=a&end=soon", "end: not a number"),
    ("/v1/show", "GET", "jobid=1&x=1", "unknown parameter 'x'"),
    ("/v1/show", "GET", "jobid=%ff", "not UTF-8"),
    ("/v1/show", "GET", "&".join(f"jobid={i}" for i in range(5)), "at most 4"),
    ("/v1/report", "GET", "", "not a job id"),
    ("/v1/report", "GET", "jobid=1&jobid=2", "at most 1"),
    ("/v1/mail", "POST", "enabled=yes", "enabled=true or enabled=false"),
    ("/v1/mail", "POST", "enabled=true&user=99999999999999999999", "not a uid"),
    ("/v1/mail", "GET", "user=4294967295", "not a uid"),
    ("/v1/mail", "GET", "enabled=true", "enabled= is for POST"),
    ("/v1/usage", "GET", "attribution=yes", "attribution=1 or attribution=0"),
    ("/v1/jobs", "GET", "start=0&end=2678401", "a period of at most 31 days"),
    ("/v1/jobs", "GET", "start=10&end=5", "start: after end"),
    ("/v1/jobs", "GET", "start=nan", "start: not a number"),
    ("/v1/jobs", "GET", "user=a%0Ab", "user: not a name"),
    ("/v1/jobs", "GET", "jobid=1", "unknown parameter 'jobid'"),
    ("/v1/jobs", "GET", "user=a&user=b", "user= given 2 times"),
    ("/v1/top", "GET", "by=host", "by: one of job, user, account"),
    ("/v1/top", "GET", "sort=open", "sort: one of write"),
    ("/v1/daily", "GET", "", "date: not a day"),
    ("/v1/daily", "GET", "date=2026-02-30", "date: not a day"),
    ("/v1/daily", "GET", "date=20261124", "date: not a day"),
    ("/v1/daily", "GET", "date=2026-11-24%0A", "date: not a day"),
]


@pytest.mark.parametrize(("path", "method", "query", "want"), OK,
                         ids=[f"{p}?{q}" for p, _, q, _ in OK])
def test_good_parameters_become_a_typed_request(path: str, method: str, query: str,
                                                want: object) -> None:
    assert parse(path, method, query, max_ids=4) == want


@pytest.mark.parametrize(("path", "method", "query", "words"), BAD,
                         ids=[f"{p}?{q[:40]}" for p, _, q, _ in BAD])
def test_bad_parameters_are_one_line(path: str, method: str, query: str, words: str) -> None:
    with pytest.raises(BadRequest) as e:
        parse(path, method, query, max_ids=4)
    assert words in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(("raw", "logged"), [
    ("/v1/show", "/v1/show"),
    ("/v1/x\n2026-01-01 INFO forged", "/v1/x\\x0a2026-01-01 INFO forged"),
    ("/a\r\tb\x00\x1b[31m", "/a\\x0d\\x09b\\x00\\x1b[31m"),
    ("/\udcff", "/\\xff"),
    ("/" + "a" * 300, "/" + "a" * 199 + "..."),
])
def test_logged_request_data_is_escaped(raw: str, logged: str) -> None:
    assert log_text(raw) == logged


def test_an_answer_over_max_answer_is_one_413() -> None:
    import json
    import time

    from slurm_io.config import Config
    from slurm_io.service.app import Incoming, Prepared, ServiceApp

    app = ServiceApp(Config().with_overrides(service_max_answer=1000), lambda: None)
    req = Incoming("GET", "/v1/show", "jobid=1", "/v1/show?jobid=1", None, b"")
    status, out, _ = app.answer(Prepared(req, time.perf_counter(), uid=1001,
                                         final=(200, {"jobs": ["x" * 2000]})))
    assert status == 413 and "over 1000 bytes" in json.loads(out)["error"]
    status, out, _ = app.answer(Prepared(req, time.perf_counter(), uid=1001,
                                         final=(200, {"jobs": ["x" * 10]})))
    assert status == 200


def test_the_fair_pool_takes_uids_in_turn() -> None:
    """One uid's 20 queued requests do not go before another uid's one: the workers take
    the uids in turn, and a uid runs at most max_running at once."""
    gate = threading.Event()
    order: list[str] = []
    pool = FairPool(1, max_queued=32, max_running=1)
    try:
        started = threading.Event()
        first = pool.submit("flood", lambda: (started.set(), gate.wait()))  # the one worker
        assert started.wait(10)
        flood = [pool.submit("flood", lambda i=i: order.append(f"flood{i}"))
                 for i in range(20)]
        honest = pool.submit("alice", lambda: order.append("alice"))
        gate.set()
        for f in [first, *flood, honest]:
            f.result(timeout=10)
        assert order.index("alice") == 1  # after the flood's first queued request only
        with pytest.raises(Busy):
            gate.clear()
            pool.submit("flood", gate.wait)
            for _ in range(40):
                pool.submit("flood", lambda: None)
        gate.set()
    finally:
        gate.set()
        pool.stop()


def test_the_service_limit_keys_load(tmp_path) -> None:
    """The limits of docs/service.md are configuration keys, sizes in docs' notation."""
    from slurm_io.config import load

    path = tmp_path / "service.toml"
    path.write_text('[service]\nhandshake_timeout = 2\nhead_timeout = 3.5\nidle_timeout = 9\n'
                    'max_line = "8KiB"\nmax_head = "32KiB"\nmax_per_peer = 7\n'
                    'max_unauthenticated = 70\nmax_ids = 9\nmax_answer = "1MiB"\n'
                    'max_queued = 5\nmax_running = 2\n')
    cfg = load(path)
    assert (cfg.service_handshake_timeout, cfg.service_head_timeout,
            cfg.service_idle_timeout) == (2.0, 3.5, 9.0)
    assert (cfg.service_max_line, cfg.service_max_head, cfg.service_max_answer) == (
        8192, 32768, 1 << 20)
    assert (cfg.service_max_per_peer, cfg.service_max_unauthenticated, cfg.service_max_ids,
            cfg.service_max_queued, cfg.service_max_running) == (7, 70, 9, 5, 2)
