"""The report daemon's ledger of mailed jobs (notify.ledger): durable, windowed, by run."""

from __future__ import annotations

import time

from slurm_io.notify.ledger import SentLedger, describe, key_of


def test_a_mailed_job_is_found_again_after_a_restart_within_the_window(tmp_path):
    path = tmp_path / "kept" / "sent.ledger"
    book = SentLedger(path, 3 * 86400)
    key = key_of("lab", 4242, 17, 1_795_000_000.7)
    assert key == "lab:4242:1795000000"
    book.add(key, "<jobio-17.1795000000@lab.example>", now=time.time() - 60)
    again = SentLedger(path, 3 * 86400)
    seen = again.sent(key)
    assert seen is not None and seen[1] == "<jobio-17.1795000000@lab.example>"
    assert "Message-ID <jobio-17.1795000000@lab.example>" in describe(seen)
    assert again.sent(key_of("lab", 4242, 17, 1_795_000_999)) is None  # another run


def test_lines_older_than_the_window_and_torn_lines_are_dropped_at_start(tmp_path):
    path = tmp_path / "sent.ledger"
    now = time.time()
    book = SentLedger(path, 3600)
    book.add("lab:1:-", "<a>", now=now - 7200)
    book.add("lab:2:-", "<b>", now=now - 60)
    with open(path, "a") as f:
        f.write("12345\tlab:3")  # cut by a crash
    again = SentLedger(path, 3600, now=now)
    assert len(again) == 1 and again.sent("lab:2:-") is not None
    assert again.sent("lab:1:-") is None
    assert path.read_text().count("\n") == 1  # rewritten without them
    assert key_of(None, None, 99, None) == "-:99:-"
