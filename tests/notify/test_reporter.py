"""The reporter on real parts: PostgreSQL, a real SMTP server (aiosmtpd in this process),
the hook as a subprocess, the reporter in-process or as `jobio report-daemon --once`.

What must hold: one mail per job, waiting for sacct's final record and for the collectors,
retries with back-off and then `failed`; whatever happens (a crash between the server's
acceptance and the bookkeeping, two reporters at once, a database outage under the hook):
test_reporter_once.py."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from email.message import EmailMessage, Message

import psycopg
import pytest

from slurm_io.config import Config
from slurm_io.notify import queue
from slurm_io.notify.interfaces import load_builder
from slurm_io.notify.plain import PlainMailBuilder
from slurm_io.notify.reporter import message_id
from slurm_io.notify.smtp import wire_body
from tests.notify.conftest import (
    DOMAIN,
    SENDER,
    add_job,
    collectors_read_until,
    fake_sacct,
    queue_rows,
    ready_jobs,
    sacct_line,
    ts,
    write_config,
)
from tests.notify.reporting import jobio, make_config, make_reporter, run_until, submit_of

pytestmark = pytest.mark.pg


# -- the normal path --------------------------------------------------------------------------


def test_ready_jobs_are_mailed_once_each_with_a_deterministic_message_id(
        db_dsn, smtp, tmp_path):
    sink, port = smtp
    ready_jobs(db_dsn, {101: "alice", 102: "bob"})
    reporter = make_reporter(make_config(db_dsn, port, tmp_path))
    result = reporter.run_once()
    assert (result.sent, result.failed, result.waiting) == (2, 0, 0)
    by_job = sink.by_job()
    assert sorted(by_job) == [101, 102] and all(len(v) == 1 for v in by_job.values())
    for job, user in ((101, "alice"), (102, "bob")):
        got = by_job[job][0]
        assert got.rcpt_tos == [f"{user}@{DOMAIN}"] and got.mail_from == SENDER
        assert got.message["To"] == f"{user}@{DOMAIN}"
        assert got.message["Message-ID"] == message_id(job, submit_of(db_dsn, job), DOMAIN)
        assert got.message["X-Jobio-Data-Complete"] is None
    rows = queue_rows(db_dsn)
    assert {r["state"] for r in rows.values()} == {"sent"}
    assert rows[101]["attempts"] == 1 and rows[101]["recipients"] == [f"alice@{DOMAIN}"]
    assert rows[101]["message_id"] == by_job[101][0].message["Message-ID"]
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT job, complete FROM job_io ORDER BY job").fetchall() == [
            (101, True), (102, True)]
    assert reporter.run_once().sent == 0
    assert len(sink.received) == 2


def test_a_job_jobio_attribute_stored_finally_is_mailed_without_attributing_again(
        db_dsn, smtp, tmp_path):
    from slurm_io.attribute.batch import attribute_jobs
    from slurm_io.attribute.stored import pending_jobs

    sink, port = smtp
    ready_jobs(db_dsn, {111: "alice"})
    with psycopg.connect(db_dsn) as conn:
        assert attribute_jobs(conn, pending_jobs(conn, 0)) == (1, 1)
        before = conn.execute("SELECT computed_at, revision FROM job_io WHERE job = 111"
                              ).fetchone()
    assert make_reporter(make_config(db_dsn, port, tmp_path)).run_once().sent == 1
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT computed_at, revision FROM job_io WHERE job = 111"
                            ).fetchone() == before
    assert list(sink.by_job()) == [111]


def test_a_job_waits_for_the_collectors_and_max_wait_sends_it_marked_incomplete(
        db_dsn, smtp, tmp_path):
    sink, port = smtp
    now = time.time()
    with psycopg.connect(db_dsn) as conn:
        add_job(conn, 201, start=now - 60, end=now - 2)
        add_job(conn, 202, user="bob", uid=1003, start=now - 90, end=now - 30)
        for j in (201, 202):
            queue.enqueue(conn, j, queued_at=None, source="hook")
        collectors_read_until(conn, now - 100)
    reporter = make_reporter(make_config(db_dsn, port, tmp_path, report_max_wait=10.0))
    first = reporter.run_once()
    assert (first.sent, first.waiting) == (1, 1)
    rows = queue_rows(db_dsn)
    assert rows[201]["state"] == "queued" and "collector" in rows[201]["note"]
    assert rows[202]["state"] == "sent" and rows[202]["incomplete"] is True
    assert sink.by_job()[202][0].message["X-Jobio-Data-Complete"] == "no"
    with psycopg.connect(db_dsn) as conn:
        collectors_read_until(conn, time.time())
    run_until(reporter, lambda: queue_rows(db_dsn)[201]["state"] == "sent")
    assert sink.by_job()[201][0].message["X-Jobio-Data-Complete"] is None
    with psycopg.connect(db_dsn) as conn:
        assert dict(conn.execute("SELECT job, complete FROM job_io").fetchall()) == {
            201: True, 202: False}
    assert len(sink.received) == 2


def test_a_job_waits_for_sacct_to_call_it_final(db_dsn, smtp, tmp_path):
    sink, port = smtp
    now = time.time()
    with psycopg.connect(db_dsn) as conn:
        add_job(conn, 301, start=None, end=None, state=None, source="hook",
                nodes=("node01",))
        queue.enqueue(conn, 301, queued_at=now, source="hook")
        collectors_read_until(conn, now + 30)
    sacct = fake_sacct(tmp_path, [sacct_line(301, state="RUNNING", start=now - 60, end=None)])
    reporter = make_reporter(make_config(db_dsn, port, tmp_path), sacct=sacct)
    first = reporter.run_once()
    assert first.waiting == 1 and first.synced == 1 and not sink.received
    assert "sacct" in queue_rows(db_dsn)[301]["note"]
    fake_sacct(tmp_path, [sacct_line(301, start=now - 60, end=now - 1)])
    run_until(reporter, lambda: sink.received)
    assert sink.by_job()[301][0].rcpt_tos == [f"alice@{DOMAIN}"]
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT state, source FROM job WHERE job_raw = 301").fetchone() == (
            "COMPLETED", "sacct")


def test_the_sweep_queues_jobs_without_a_hook_and_skips_those_that_never_ran(
        db_dsn, smtp, tmp_path):
    sink, port = smtp
    now = time.time()
    with psycopg.connect(db_dsn) as conn:  # slurm-io "installed" 2 minutes ago
        conn.execute("UPDATE schema_migrations SET applied_at = %s WHERE version = 5",
                     (ts(now - 120),))
        collectors_read_until(conn, now + 30)
    sacct = fake_sacct(tmp_path, [
        sacct_line(401, start=now - 100, end=now - 10),
        sacct_line(402, user="bob", uid=1003, state="CANCELLED by 1003", start=None,
                   end=now - 5, nodes="None assigned"),
        sacct_line(403, start=now - 3600, end=now - 600),  # ended before the installation
        sacct_line(404, state="RUNNING", start=now - 50, end=None),
    ])
    reporter = make_reporter(make_config(db_dsn, port, tmp_path, report_sweep_every=1.0),
                             sacct=sacct)
    result = reporter.run_once()
    assert (result.swept, result.skipped, result.sent) == (1, 1, 1)
    rows = queue_rows(db_dsn)
    assert sorted(rows) == [401, 402]
    assert rows[401]["source"] == "sweep" and rows[401]["state"] == "sent"
    assert rows[402]["state"] == "skipped" and "never ran" in rows[402]["note"]
    assert list(sink.by_job()) == [401]
    # the next sweep finds nothing new; no second mail
    time.sleep(1.1)
    again = reporter.run_once()
    assert (again.swept, again.sent) == (0, 0) and len(sink.received) == 1


# -- failures -----------------------------------------------------------------------------------


def test_a_refusing_server_is_retried_with_back_off_then_failed_listed_and_retried(
        db_dsn, smtp, tmp_path, monkeypatch):
    sink, port = smtp
    sink.rcpt_reply = "550 5.1.1 <alice@lab.example>: Recipient address rejected"
    ready_jobs(db_dsn, {601: "alice"})
    reporter = make_reporter(make_config(db_dsn, port, tmp_path))
    seen = []

    def record() -> bool:
        with psycopg.connect(db_dsn) as conn:
            row = conn.execute(
                "SELECT state, attempts, extract(epoch FROM next_attempt - updated_at)::float8,"
                " last_error FROM report_queue WHERE job = 601").fetchone()
        if not seen or seen[-1][:2] != row[:2]:
            seen.append(row)
        return row[0] == "failed"

    run_until(reporter, record)
    assert [s[:2] for s in seen] == [("queued", 0), ("queued", 1), ("queued", 2), ("failed", 3)]
    delays = [s[2] for s in seen[1:3]]
    assert delays[0] == pytest.approx(0.2, abs=0.05)
    assert delays[1] == pytest.approx(0.4, abs=0.05)  # doubled
    assert "550" in seen[-1][3] and sink.refused == 3 and not sink.received

    monkeypatch.setenv("SLURM_IO_CONFIG", str(write_config(
        tmp_path / "c.toml", dsn=None, spool=tmp_path / "spool", port=port)))
    code, out = jobio("--dsn", db_dsn, "reports", "--state", "failed")
    assert code == 0 and "601" in out and "550" in out
    code, out = jobio("--dsn", db_dsn, "report-daemon", "--status")
    assert code == 1 and "failed 1" in out
    code, out = jobio("--dsn", db_dsn, "reports", "--retry", "601")
    assert code == 0 and "queued again" in out
    sink.rcpt_reply = None
    run_until(reporter, lambda: sink.received)
    reporter.run_once()
    assert len(sink.received) == 1 and queue_rows(db_dsn)[601]["state"] == "sent"


def test_a_refusal_after_the_whole_message_is_retried_and_then_sent_once(
        db_dsn, smtp, tmp_path):
    sink, port = smtp
    sink.data_reply = "451 4.3.0 Temporary failure, try again later"
    ready_jobs(db_dsn, {701: "alice"})
    reporter = make_reporter(make_config(db_dsn, port, tmp_path))
    result = reporter.run_once()
    assert result.retried == 1 and not sink.received
    row = queue_rows(db_dsn)[701]
    assert (row["state"], row["attempts"]) == ("queued", 1) and "451" in row["last_error"]
    sink.data_reply = None
    run_until(reporter, lambda: sink.received)
    reporter.run_once()
    row = queue_rows(db_dsn)[701]
    assert (row["state"], row["attempts"], len(sink.received)) == ("sent", 2, 1)


def test_no_smtp_server_is_retried(db_dsn, tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ready_jobs(db_dsn, {801: "alice"})
    result = make_reporter(make_config(db_dsn, port, tmp_path)).run_once()
    assert result.retried == 1
    row = queue_rows(db_dsn)[801]
    assert row["state"] == "queued" and "refused" in row["last_error"].lower()


def test_a_builder_saying_no_mail_skips_and_a_failing_builder_is_retried(
        db_dsn, smtp, tmp_path):
    sink, port = smtp
    ready_jobs(db_dsn, {901: "alice", 902: "bob"})

    class Picky:
        def build(self, conn: psycopg.Connection, job: int) -> EmailMessage | None:
            if job == 901:
                return None
            raise RuntimeError("template broken")

    reporter = make_reporter(make_config(db_dsn, port, tmp_path), builder=Picky())
    result = reporter.run_once()
    assert (result.skipped, result.retried) == (1, 1)
    rows = queue_rows(db_dsn)
    assert rows[901]["state"] == "skipped" and "policy" in rows[901]["note"]
    assert rows[902]["state"] == "queued" and "template broken" in rows[902]["last_error"]
    # the failed build rolled back to its savepoint: the job_io it stored is gone with it
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM job_io WHERE job = 902").fetchone() == (0,)
    assert not sink.received


def test_a_message_that_cannot_be_serialised_is_retried_and_holds_up_no_other_job(
        db_dsn, smtp, tmp_path):
    sink, port = smtp
    ready_jobs(db_dsn, {951: "alice", 952: "bob"})
    cfg = make_config(db_dsn, port, tmp_path)
    plain = PlainMailBuilder(cfg)

    class Broken:
        def build(self, conn: psycopg.Connection, job: int) -> Message | None:
            if job == 952:
                return plain.build(conn, job)
            msg = Message()  # compat32, non-ASCII text without a charset: as_bytes fails
            msg["To"] = f"alice@{DOMAIN}"
            msg.set_payload("caf\u00e9")
            return msg

    result = make_reporter(cfg, builder=Broken()).run_once()  # type: ignore[arg-type]
    assert (result.sent, result.retried) == (1, 1)
    assert list(sink.by_job()) == [952]
    row = queue_rows(db_dsn)[951]
    assert row["state"] == "queued" and "UnicodeEncodeError" in row["last_error"]


def test_a_message_without_recipients_fails_at_once(db_dsn, smtp, tmp_path):
    sink, port = smtp
    ready_jobs(db_dsn, {961: "alice"})

    class Nobody:
        def build(self, conn: psycopg.Connection, job: int) -> EmailMessage | None:
            msg = EmailMessage()
            msg["Subject"] = "to nobody"
            msg.set_content("x")
            return msg

    cfg = make_config(db_dsn, port, tmp_path)
    assert make_reporter(cfg, builder=Nobody()).run_once().failed == 1
    assert queue_rows(db_dsn)[961]["state"] == "failed" and not sink.received


def test_rows_left_sending_by_a_dead_reporter_are_resolved_as_sent_never_resent(db_dsn):
    dead = subprocess.Popen(["true"])
    dead.wait()
    here = socket.gethostname()
    with psycopg.connect(db_dsn) as conn:
        for job, by, age in ((1001, "otherhost:1", 3600), (1002, "otherhost:2", 5),
                             (1003, f"{here}:{dead.pid}", 5), (1004, f"{here}:{os.getpid()}", 5)):
            conn.execute("INSERT INTO report_queue (job, source, state, claimed_by, claimed_at)"
                         " VALUES (%s, 'hook', 'sending', %s, now() - make_interval(secs => %s))",
                         (job, by, age))
        conn.commit()
        from slurm_io.notify.reporter import claimer_alive

        assert sorted(queue.resolve_orphans(conn, lease=600, alive=claimer_alive)) == [
            1001, 1003]
    rows = queue_rows(db_dsn)
    assert rows[1001]["state"] == "sent" and "unconfirmed" in rows[1001]["note"]
    assert rows[1002]["state"] == rows[1004]["state"] == "sending"


# -- the builder interface -------------------------------------------------------------------


def test_the_site_mail_builder_plugs_in_when_it_is_installed(db_dsn, smtp, tmp_path,
                                                             monkeypatch):
    monkeypatch.delenv("SLURM_IO_MAIL_BUILDER", raising=False)
    sink, port = smtp
    ready_jobs(db_dsn, {1401: "alice"})
    cfg = make_config(db_dsn, port, tmp_path, mail_policy="all", mail_slurm_lookup=False)
    builder = load_builder(cfg)
    assert type(builder).__module__ == "slurm_io.mail.builder"
    make_reporter(cfg, builder=builder).run_once()
    got = sink.by_job()[1401]
    assert len(got) == 1 and got[0].rcpt_tos == [f"alice@{DOMAIN}"]
    assert got[0].message["Message-ID"] == message_id(1401, submit_of(db_dsn, 1401), DOMAIN)


def test_the_builder_override_and_the_fallback(monkeypatch):
    cfg = Config(mail_domain=DOMAIN)
    monkeypatch.setenv("SLURM_IO_MAIL_BUILDER", "slurm_io.notify.plain:PlainMailBuilder")
    assert isinstance(load_builder(cfg), PlainMailBuilder)
    with pytest.raises(ValueError, match="module:attribute"):
        load_builder(cfg, "no-colon")


def test_the_message_goes_on_the_wire_dot_stuffed_with_crlf():
    assert wire_body(b"a\n.b\r\n..c\rd") == b"a\r\n..b\r\n...c\r\nd\r\n"
    assert wire_body(b".\n") == b"..\r\n"
