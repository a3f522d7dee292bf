"""What the report daemon does about a database restored from a backup (docs/mail.md).

Two things a restore takes away from the database and the reporter must not lose or repeat:
the jobs hooked since the backup (their hook records are kept for the replay window and put
back into the spool: notify.hookspool.recover) and the knowledge of which jobs were mailed
(the ledger outside the database: notify.ledger). Apart from reporter.py so that the
reporter's pass only calls them.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from slurm_io.notify import hookspool, ledger, queue
from slurm_io.notify.reporter_settings import ReporterSettings

log = logging.getLogger("slurm_io.report")

LEDGER_NAME = "sent.ledger"  # in the hook spool's kept/


def open_ledger(s: ReporterSettings) -> ledger.SentLedger | None:
    """The ledger of mailed jobs, next to the kept hook records; None without a window (or
    when it cannot be read: logged, mails go on)."""
    if s.replay_window <= 0:
        return None
    path = s.spool_dir / hookspool.KEPT / LEDGER_NAME
    try:
        if s.spool_dir.is_dir():
            hookspool.kept_dir(str(s.spool_dir))
        return ledger.SentLedger(path, s.replay_window)
    except OSError as e:
        log.error("the ledger of mailed jobs %s cannot be read (%s): after a database "
                  "restore, jobs mailed before it could be mailed again", path, e)
        return None


def recover_hooks(conn: Any, s: ReporterSettings, pruned_at: float) -> float:
    """Spool again the kept hook records of jobs the database lacks; prune kept records
    older than the window (at most every tenth of it, or 10 min). Returns when it pruned."""
    if s.replay_window <= 0:
        return pruned_at
    spool = str(s.spool_dir)
    again = hookspool.recover(conn, spool)
    if again:
        log.warning("the database lacks %d job(s) whose hook records it had stored "
                    "(restored from a backup?): spooled again: %s", len(again),
                    " ".join(map(str, again[:20])) + (" ..." if len(again) > 20 else ""))
    now = time.time()
    if now - pruned_at >= min(600.0, s.replay_window / 10):
        hookspool.prune_kept(spool, s.replay_window, now)
        return now
    return pruned_at


def mailed_before(conn: Any, book: ledger.SentLedger | None, c: queue.Claimed) -> bool:
    """A claimed job that the ledger says was mailed is marked `sent` with a note (and
    committed) instead of mailed again; True then."""
    if book is None:
        return False
    seen = book.sent(ledger.key_of(c.cluster, c.raw, c.job, c.submit))
    if seen is None:
        return False
    note = f"mailed before the database was restored ({ledger.describe(seen)}); not sent again"
    queue.mark_sent(conn, c.job, note)
    conn.commit()
    log.warning("job %s: %s", c.job, note)
    return True


def remember(book: ledger.SentLedger | None, c: queue.Claimed, mid: str) -> None:
    """Enter a mailed job in the ledger; a ledger that cannot be written is logged."""
    if book is None:
        return
    try:
        book.add(ledger.key_of(c.cluster, c.raw, c.job, c.submit), mid)
    except OSError as e:
        log.error("job %s: mailed, but the ledger %s cannot be written (%s): a restored "
                  "database could have it mailed again", c.job, book.path, e)
