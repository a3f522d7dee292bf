"""`jobio JOBID` without click (cli/entry.py) is the click group's `show`, byte for byte.

The console script runs a plain `jobio [--server URL] [show] JOBID...` itself (issue 25:
click and the group's options were ~20 ms of CPU of every call); any other command line goes
to the group. `--config FILE` with the same file makes the same command the group's, so each
case here runs both ways as alice with the installed `jobio` and compares exit status,
stdout and stderr: reports, jobs not found, a job not started, failures (the database or
the service down, a bad configuration, a refused credential).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.site.conftest import Site, run_as
from tests.site.services import free_port
from tests.site.test_service import Service, started_service

pytestmark = [pytest.mark.pg]


@pytest.fixture(scope="module")
def local_config(site: Site) -> Path:
    return site.config("plain-local", f'dsn = "{site.user_dsn}"\n')


@pytest.fixture(scope="module")
def plain_service(site: Site) -> Iterator[Service]:
    with started_service(site, "plain-service") as started:
        yield started


def both_ways(site: Site, config: Path, args: list[str]) -> tuple[tuple, tuple]:
    """(exit, stdout, stderr) of the plain path and of the group, as alice."""
    plain = run_as("alice", site.jobio, args, config=config)
    group = run_as("alice", site.jobio, ["--config", str(config), *args], config=config)
    return ((plain.returncode, plain.stdout, plain.stderr),
            (group.returncode, group.stdout, group.stderr))


LOCAL_CASES = [
    ["8101"],
    ["show", "8200_2"],
    ["8101", "8200"],  # two reports
    ["8101", "8110"],  # a report and a job not started: exit 1
    ["show", "8301"],  # another user's job: no such job
    ["4294967296999"],
]


@pytest.mark.parametrize("args", LOCAL_CASES, ids=lambda a: " ".join(a))
def test_plain_show_from_the_database_is_the_groups(site: Site, local_config: Path,
                                                    unstarted_jobs: dict, args: list[str]
                                                    ) -> None:
    plain, group = both_ways(site, local_config, args)
    assert plain == group
    assert plain[1] or plain[2]  # it printed something


@pytest.mark.parametrize("text", [
    'dsn = "host=/nonexistent/pg dbname=x"\n',  # the database down
    'dsn = "host=/nonexistent/pg dbname=x"\nbogus_key = 1\n',  # a configuration mistake
    'dsn = 5\n',
])
def test_plain_show_failures_are_the_groups_one_line(site: Site, text: str) -> None:
    cfg = site.config("plain-broken", text)
    plain, group = both_ways(site, cfg, ["8101"])
    assert plain == group
    assert plain[0] != 0 and plain[2].count("\n") == 1 and "Traceback" not in plain[2]


def test_plain_show_imports_no_click(site: Site, local_config: Path,
                                     plain_service: Service) -> None:
    for args, cfg in ((["8101"], local_config), (["8101"], plain_service.client),
                      (["--server", plain_service.url, "show", "8101"], plain_service.client)):
        proc = run_as("alice", site.jobio, args, config=cfg,
                      env={"PYTHONPROFILEIMPORTTIME": "1"})
        assert proc.returncode == 0, proc.stderr[-2000:]
        names = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
                 if line.startswith("import time:") and line.count("|") == 2}
        assert "slurm_io.report.show" in names  # the log is there and show ran
        assert not {n for n in names if n.split(".")[0] == "click"}, args


CLIENT_CASES = [
    ["8101"],
    ["show", "8200"],
    ["8101", "8110"],
    ["show", "8301"],
]


@pytest.mark.parametrize("args", CLIENT_CASES, ids=lambda a: " ".join(a))
def test_plain_show_through_the_service_is_the_groups(plain_service: Service,
                                                      unstarted_jobs: dict,
                                                      args: list[str]) -> None:
    site = plain_service.site
    plain, group = both_ways(site, plain_service.client, args)
    assert plain == group
    assert plain[1] or plain[2]
    url = ["--server", plain_service.url]
    assert both_ways(site, plain_service.client, url + args) == (plain, plain)


def test_plain_show_through_the_service_fails_as_the_group(plain_service: Service) -> None:
    site = plain_service.site
    down = site.config("plain-down", f'server = "https://127.0.0.1:{free_port()}"\n'
                       f'server_ca = "{plain_service.ca}"\n'
                       f'[munge]\nsocket = "{plain_service.sock}"\n')
    forged = site.config("plain-forged", f'server = "{plain_service.url}"\n'
                         f'server_ca = "{plain_service.ca}"\n'
                         f'[munge]\nsocket = "{plain_service.forger}"\n')
    for cfg, start in ((down, "Error: cannot reach the jobio service at https://"),
                       (forged, "Error: the jobio service refused: MUNGE credential")):
        plain, group = both_ways(site, cfg, ["8101"])
        assert plain == group
        assert plain[0] == 1 and plain[2].startswith(start) and plain[2].count("\n") == 1
