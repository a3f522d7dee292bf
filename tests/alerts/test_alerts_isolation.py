"""Issue 18, finding 4: one job's text never stops the other users' alerts.

A running job named `nl\\nname` used to make every pass of `jobio alerts` exit 1 ("Header
values may not contain linefeed"), so no other user was warned. Here two running jobs (the
live cluster of tests/exporter/live.py: ana's metadata storm 7001 and ben's tiny writes 7002)
are checked by the installed `jobio alerts` against a real SMTP server, ana's job renamed to
the worst a user can choose (newline, CR, a forged Bcc, NUL, a raw byte, a Unicode line
separator, 5,000 characters), stored as the intake stores it (slurm_io.text.clean).
"""

from __future__ import annotations

import json

import psycopg

from slurm_io.text import clean
from tests.alerts.test_alerts import _at, _jobio, _live_cfg
from tests.exporter import live
from tests.notify.smtp_sink import smtp_server

HOSTILE = clean("nl\nname\r\nBcc: evil@example.org\r\n\r\nbody\x00\udcff\u2028\x85é"
                + "x" * 5000)


def _rename(dsn: str, job: int, name: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE job SET name = %s WHERE job_raw = %s", (name, job))


def _problems(cfg, dsn: str) -> list[dict]:
    r = _jobio(cfg, dsn, "problems", "--source", "alerts", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    return out["problems"] if isinstance(out, dict) else out


def test_a_hostile_job_name_is_one_safe_subject_and_every_user_is_warned(db_dsn, tmp_path):
    at = _at(live.load(db_dsn))
    _rename(db_dsn, 7001, HOSTILE)
    with smtp_server() as (sink, port):
        cfg = _live_cfg(tmp_path, port)
        r = _jobio(cfg, db_dsn, "alerts", *at)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr and r.stderr == ""
        got = {m.message["X-Jobio-Job"]: m for m in sink.received}
        assert sorted(got) == ["7001", "7002"]  # ana and ben, both warned
        assert got["7002"].rcpt_tos[0] == "ben@example.org"
        ana = got["7001"]
        assert ana.rcpt_tos == ["ana@example.org", "hpc-admin@example.org"]  # no forged Bcc
        assert ana.message["Bcc"] is None
        raw = str(ana.message["Subject"])
        assert not any(c in raw for c in "\r\n\x00\x85\u2028"), raw
        subject = " ".join(raw.split(" "))  # RFC 2047 unfolding may double a space
        subject = " ".join(w for w in subject.split(" ") if w)
        assert subject.startswith("Your running job 7001 (nl name Bcc: evil@example.org body"
                                  "\\x00\\xff é"), subject
        assert subject.endswith("is straining the file system: metadata")
        assert len(subject) < 200
        # every header of the mail is one line of text
        for key, value in ana.message.items():
            assert "\n" not in str(value) and "\r" not in str(value), key
        assert _problems(cfg, db_dsn) == []


def test_a_job_whose_alert_fails_is_a_problem_and_the_others_are_sent(db_dsn, tmp_path):
    at = _at(live.load(db_dsn))
    _rename(db_dsn, 7001, HOSTILE)
    site = tmp_path / "site"
    site.mkdir()
    # a site template that assumes ASCII job names: it fails on ana's job, not on ben's
    (site / "alert.txt.j2").write_text(
        "Dear {{ job.user }}: job {{ job.jobid }} ({{ job.name.encode('ascii').decode() }})\n")
    with smtp_server() as (sink, port):
        cfg = _live_cfg(tmp_path, port)
        cfg.write_text(cfg.read_text().replace("[mail]\n", f'[mail]\ntemplate_dir = "{site}"\n'))
        for _ in range(2):  # the second pass tries ana's job again: still one problem
            r = _jobio(cfg, db_dsn, "alerts", *at)
            assert r.returncode == 0, r.stderr
            assert "Traceback" not in r.stderr
            lines = r.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("jobio: alert of job 7001: "
                                                           "UnicodeEncodeError"), r.stderr
            assert "job 7001 (ana): metadata: problem" in r.stdout
        assert [m.message["X-Jobio-Job"] for m in sink.received] == ["7002"]  # ben warned
        found = _problems(cfg, db_dsn)
        assert len(found) == 1, found
        assert found[0]["origin"] == "job 7001"
        assert "UnicodeEncodeError" in found[0]["reason"]
        states = sorted((x["jobid"], x["state"]) for x in json.loads(
            _jobio(cfg, db_dsn, "alerts", "--list", "--json").stdout))
        assert states == [("7001", "failed"), ("7001", "failed"), ("7002", "sent")]
