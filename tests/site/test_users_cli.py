"""Every user-facing command, run as an ordinary OS user with the installed `jobio`.

What alice sees of her own jobs is what root sees of them, byte for byte; another user's job is
"no such job" for her; commands only admins may run say so in one line. Peer authentication on
the session's embedded server proves who runs the command (docs/privacy.md).
"""

from __future__ import annotations

import email
import json
from pathlib import Path

import pytest

from tests.site.conftest import Site, as_json, run_as

pytestmark = [pytest.mark.pg]


@pytest.fixture(scope="module")
def user_config(site: Site) -> Path:
    return site.config("users", f'dsn = "{site.user_dsn}"\n'
                       '[privacy]\nadmin_group = "slurmio-admin"\n')


def root(site: Site, *args: str):
    return run_as(None, site.jobio, ["--dsn", site.superuser_dsn, *args])


def alice(site: Site, cfg: Path, *args: str):
    return run_as("alice", site.jobio, list(args), config=cfg)


SHOW_VARIANTS = [
    ["show", "8101", "--json"],
    ["8101"],
    ["show", "8200", "--json"],  # an array: every task
    ["show", "8200_2"],
    ["show", "8101", "--targets", "--timeline"],
    ["show", "8101", "8200", "-P", "-o", "JobID,User,ReadBytes,WriteBytes,open"],
    ["show", "-u", "alice", "-S", "2024-04-03T00:00", "-E", "2024-04-04T00:00", "--json"],
]


@pytest.mark.parametrize("args", SHOW_VARIANTS, ids=lambda a: " ".join(a))
def test_a_user_sees_their_own_jobs_exactly_as_root_does(site: Site, user_config: Path,
                                                         args: list[str]) -> None:
    mine = alice(site, user_config, *args)
    assert mine.returncode == 0, mine.stderr
    assert mine.stderr == ""
    theirs = root(site, *args).stdout
    if "-u" in args:  # the privacy test's jobs are still running: their elapsed time grows
        assert _settled(json.loads(mine.stdout)) == _settled(json.loads(theirs))
    else:
        assert mine.stdout == theirs
    assert "8101" in mine.stdout or "8200" in mine.stdout


def _settled(reports: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not (r["running"] and k == "elapsed")}
            for r in reports]


def test_the_user_list_of_a_user_holds_only_their_jobs(site: Site, user_config: Path) -> None:
    everyone = as_json(root(site, "show", "-u", "bob", "-S", "2024-04-03T00:00", "-E",
                            "2024-04-04T00:00", "--json"))
    assert "8301" in [r["jobid"] for r in everyone]  # type: ignore[index]
    seen = alice(site, user_config, "show", "-u", "bob", "-S", "2024-04-03T00:00", "-E",
                 "2024-04-04T00:00", "--json")
    assert as_json(seen) == []


def test_another_users_job_is_no_such_job(site: Site, user_config: Path) -> None:
    assert root(site, "show", "8301").returncode == 0
    proc = alice(site, user_config, "show", "8301")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == "jobio: job 8301: no such job, or no I/O recorded for it\n"


def test_report_text_html_and_eml_of_a_users_own_job(site: Site, user_config: Path,
                                                      tmp_path: Path) -> None:
    text = alice(site, user_config, "report", "8101")
    assert text.returncode == 0, text.stderr
    assert text.stdout == root(site, "report", "8101").stdout
    out = site.dir / "alice-out"
    out.mkdir(exist_ok=True)
    out.chmod(0o777)
    proc = alice(site, user_config, "report", "8101", "--html", str(out / "r.html"),
                 "--eml", str(out / "r.eml"))
    assert proc.returncode == 0, proc.stderr
    msg = email.message_from_bytes((out / "r.eml").read_bytes())
    assert "8101" in msg["Subject"]
    assert "<html" in (out / "r.html").read_text().lower()
    theirs = alice(site, user_config, "report", "8301")
    assert theirs.returncode == 1
    assert theirs.stderr.strip().count("\n") == 0
    assert "no such job" in theirs.stderr


def test_mail_off_status_on_as_a_user(site: Site, user_config: Path) -> None:
    off = alice(site, user_config, "mail", "off")
    assert off.returncode == 0, off.stderr
    status = alice(site, user_config, "mail", "status")
    assert status.returncode == 0, status.stderr
    assert "mails:   off" in status.stdout
    assert "user:    alice" in status.stdout
    on = alice(site, user_config, "mail", "on")
    assert on.returncode == 0, on.stderr
    assert "mails:   on" in alice(site, user_config, "mail", "status").stdout
    other = alice(site, user_config, "mail", "off", "--user", "bob")
    assert other.returncode == 1
    assert "Traceback" not in other.stderr
    assert other.stderr.strip().count("\n") == 0


def test_usage_and_top_show_a_user_their_own_load(site: Site, user_config: Path) -> None:
    window = ["-S", "2024-04-03T08:00", "-E", "2024-04-03T11:00"]
    mine = as_json(alice(site, user_config, "usage", *window, "--json"))
    everyone = as_json(root(site, "usage", *window, "--json"))
    assert isinstance(mine, dict) and isinstance(everyone, dict)
    assert json.dumps(mine) != json.dumps(everyone)
    top = alice(site, user_config, "top", "--once", "--json", "--at", "2024-04-03T09:00")
    seen = as_json(top)
    assert isinstance(seen, dict)
    jobs = {str(r.get("job")) for r in seen.get("jobs", [])}
    assert "8301" not in jobs


@pytest.mark.parametrize("args", [
    ["daily", "--date", "2024-04-03", "--out", "/tmp"],
    ["lassi", "compute", "--date", "2024-04-03"],
    ["attribute", "--since", "2024-04-01"],
    ["db", "users", "alice"],
], ids=lambda a: " ".join(a))
def test_admin_only_commands_refuse_a_user_in_one_line(site: Site, user_config: Path,
                                                       args: list[str]) -> None:
    proc = alice(site, user_config, *args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines()
              if line.startswith(("jobio: ", "Error: "))]
    assert len(errors) == 1, proc.stderr  # (a progress label may come before it)
    assert "permission denied" in errors[0]


def test_a_job_that_has_not_started_says_what_is_missing(
        site: Site, user_config: Path, unstarted_jobs: dict[int, tuple[str, str]]) -> None:
    ids = [str(j) for j in unstarted_jobs]
    proc = alice(site, user_config, "show", *ids)
    assert (proc.returncode, proc.stdout) == (1, "")
    # bob's pending job is no such job for alice: nothing of another user's row shows
    assert proc.stderr.splitlines() == [
        f"jobio: {line}" if owner == "alice" else f"jobio: job {job}: no such job, or no I/O "
        "recorded for it" for job, (owner, line) in unstarted_jobs.items()]
    assert root(site, "show", *ids).stderr.splitlines() == [
        f"jobio: {line}" for _, line in unstarted_jobs.values()]
    # beside a job with I/O: that job as always, the pending one said, exit 1
    both = alice(site, user_config, "8101", "8110")
    assert both.returncode == 1
    assert both.stdout == alice(site, user_config, "8101").stdout
    assert both.stderr == "jobio: job 8110 is pending: no I/O before it starts\n"


def test_one_users_connections_are_capped_and_leave_the_others_theirs(
        site: Site, user_config: Path) -> None:
    """A user who holds every connection her role may open (`db users --connection-limit`,
    8 by default) gets one line from her next command; bob's commands go on, and hers do
    again once she lets go (docs/security.md, "Database roles")."""
    import subprocess

    from tests.site.conftest import RUNUSER

    limited = root(site, "db", "users", "--connection-limit", "3", "alice")
    assert limited.returncode == 0, limited.stderr
    assert "connection limit 3: alice" in limited.stdout
    hold = ("import sys, time, psycopg\n"
            "held = []\n"
            "while True:\n"
            "    try:\n"
            "        held.append(psycopg.connect(sys.argv[1]))\n"
            "    except psycopg.OperationalError as e:\n"
            "        print(len(held), str(e).strip().splitlines()[-1], flush=True)\n"
            "        break\n"
            "time.sleep(120)\n")
    python = site.jobio.parent / "python"
    holder = subprocess.Popen([RUNUSER, "-u", "alice", "--", str(python), "-c", hold,
                               site.user_dsn], stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        assert holder.stdout is not None
        first = holder.stdout.readline()
        assert first.startswith("3 ") and "too many connections" in first, first
        refused = alice(site, user_config, "show", "8101")
        assert refused.returncode != 0
        lines = refused.stderr.splitlines()
        assert len(lines) == 1 and "too many connections" in lines[0], refused.stderr
        bob = run_as("bob", site.jobio, ["show", "8301"], config=user_config)
        assert bob.returncode == 0 and "8301" in bob.stdout, bob.stderr
    finally:
        holder.kill()
        holder.wait()
        back = root(site, "db", "users", "alice")  # the default again, for the other tests
        assert "connection limit 8: alice" in back.stdout, back.stderr
    again = alice(site, user_config, "show", "8101")
    assert again.returncode == 0, again.stderr
