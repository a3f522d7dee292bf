"""HTTP fuzz against the running service (issue 18): hypothesis draws methods, paths, query
strings, headers and bodies; each request goes over TLS to a real `jobio serve`, without a
credential, with a garbage one, or with a valid one minted by alice's munge for that very
request. Never a 500, never a traceback (in the answer or the service's log), never a row of
bob's in alice's answers.

Bounded: SLURM_IO_FUZZ_EXAMPLES examples (default 40, well under a minute); a bigger run:
`SLURM_IO_FUZZ_EXAMPLES=2000 .venv/bin/python -m pytest tests/site/test_service_fuzz.py`.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.site.conftest import Site
from tests.site.hostile import HostileSite, hostile_site, raw_request, status_of

pytestmark = [pytest.mark.pg]
EXAMPLES = int(os.environ.get("SLURM_IO_FUZZ_EXAMPLES", "40"))
PATHS = ["/v1/show", "/v1/report", "/v1/mail", "/v1/usage", "/v1/jobs", "/v1/top",
         "/v1/daily", "/v1/health", "/", "/v1/",
         "/v1/show/", "/v2/show"]
KEYS = ["jobid", "user", "start", "end", "clusters", "enabled", "attribution", "by", "sort",
        "date"]
VALUES = ["8101", "8301", "8200", "8200_2", "8101.batch", "bob", "alice", "1001", "0", "-1",
          str(2**63), str(2**64), "1e18", "nan", "inf", "true", "false", "", "\x00", "1\n",
          "\udcff", "%", "..", "8101+0", "c1,c2", "*", "job", "account", "meta_ops",
          "2024-04-03", "2024-02-30", "20240403"]

methods = st.sampled_from(["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"])
paths = st.one_of(st.sampled_from(PATHS), st.text(max_size=40).map(
    lambda t: "/" + urllib.parse.quote(t, safe="/%?&=;+")))
pairs = st.lists(st.tuples(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)),
                           st.one_of(st.sampled_from(VALUES), st.text(max_size=30))),
                 max_size=8)
raw_queries = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e),
                      max_size=60)
headers = st.lists(st.tuples(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=20),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=60)),
    max_size=4)
bodies = st.one_of(st.just(b""), st.binary(max_size=200))
creds = st.sampled_from(["none", "garbage", "alice"])


@pytest.fixture(scope="module")
def svc(site: Site) -> Iterator[HostileSite]:
    with hostile_site(site, "fuzz") as h:
        yield h


def _query(pairs_: list[tuple[str, str]]) -> str:
    return urllib.parse.urlencode([(k.encode("utf-8", "surrogateescape"),
                                    v.encode("utf-8", "surrogateescape")) for k, v in pairs_])


@settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@example(method="GET", path="/v1/show", pairs_=[("jobid", "8101"), ("jobid", "8301")],
         raw=None, extra=[], body=b"", cred="alice")
@example(method="GET", path="/v1/report", pairs_=[("jobid", "8301")], raw=None, extra=[],
         body=b"", cred="alice")
@example(method="GET", path="/v1/jobs", pairs_=[("user", "bob"), ("start", "1712100000"),
                                                 ("end", "1712200000")],
         raw=None, extra=[], body=b"", cred="alice")
@example(method="GET", path="/v1/daily", pairs_=[("date", "2024-04-03")], raw=None, extra=[],
         body=b"", cred="alice")
@given(method=methods, path=paths, pairs_=pairs, raw=st.one_of(st.none(), raw_queries),
       extra=headers, body=bodies, cred=creds)
def test_no_request_gets_a_500_a_traceback_or_another_users_row(
        svc: HostileSite, method: str, path: str, pairs_: list[tuple[str, str]],
        raw: str | None, extra: list[tuple[str, str]], body: bytes, cred: str) -> None:
    query = raw if raw is not None else _query(pairs_)
    target = path + (f"?{query}" if query else "")
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    if cred == "garbage":
        lines.append("Authorization: MUNGE MUNGE:AAAAnot-a-credential:")
    elif cred == "alice" and method in ("GET", "POST") and not body:
        lines.append(f"Authorization: MUNGE {svc.mint('alice', method, target)[0]}")
    lines += [f"{n}: {v}" for n, v in extra
              if n not in ("content-length", "transfer-encoding", "host", "connection")]
    lines += [f"Content-Length: {len(body)}", "Connection: close"]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
    answer = raw_request(svc, head + body, read_timeout=15)
    status = status_of(answer)
    assert status not in (0, 500), (head[:300], answer[:300])
    _, _, payload = answer.partition(b"\r\n\r\n")
    assert b"Traceback" not in payload
    if status == 200 and method != "HEAD" and path in ("/v1/show", "/v1/report", "/v1/jobs"):
        doc = json.loads(payload)
        items = doc.get("jobs", []) + doc.get("messages", [])
        items += (doc.get("tops") or {}).get("by_bytes", [])  # /v1/daily: alice's own only
        for item in items:
            assert item.get("user") in (None, "alice"), item
            assert item["jobid"] != "8301"


def test_the_service_logged_no_traceback(svc: HostileSite) -> None:
    """After the fuzz (same module's service): the log holds no traceback and no 500."""
    text = svc.log.read_text(errors="replace")
    assert "Traceback" not in text
    assert " 500 " not in text
    assert " 200 " in text  # the fuzz did reach the handlers
