"""The report daemon's local ledger of mailed jobs, so that a restored database mails nobody twice.

Why: "sent" is a state of the job's report_queue row. A database restored from last night's
backup says "queued" for every job mailed since (and re-ingesting the kept hook records
queues the jobs it lost); the reporter would mail them again. The ledger is the reporter's
own memory, outside the database: one line per mail accepted by the SMTP server (or whose
outcome is unknown), `<unix time>\\t<cluster>:<raw job id>:<submit>\\t<Message-ID>`, appended
and fsync'ed right after the server's answer. Before building a job's mail the reporter
looks the job up; a job in the ledger is marked `sent` with a note instead of mailed.

The key is the run (cluster, Slurm's raw id, submit time), not the queue's row key: a job
the restored database lacked gets a new row key when it is stored again. Lines older than
the window (`[report] replay_window`) are dropped when the ledger is opened.

Only the standard library: the hook imports the notify package.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any


def key_of(cluster: str | None, raw: int | None, job: int, submit: float | None) -> str:
    """The run's key: what stays the same when a restored database stores the job again."""
    return (f"{cluster or '-'}:{raw if raw is not None else job}:"
            f"{'-' if submit is None else int(submit)}")


class SentLedger:
    """Mailed jobs of the last `window` seconds, in memory and in an append-only file."""

    def __init__(self, path: Path, window: float, now: float | None = None) -> None:
        self.path = Path(path)
        self.window = window
        self._sent: dict[str, tuple[float, str]] = {}
        now = time.time() if now is None else now
        lines = 0
        with contextlib.suppress(FileNotFoundError), open(self.path) as f:
            for line in f:
                lines += 1
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 3:
                    continue  # a line cut by a crash
                try:
                    t = float(parts[0])
                except ValueError:
                    continue
                if now - t <= window:
                    self._sent[parts[1]] = (t, parts[2])
        if lines > len(self._sent):
            self._rewrite()

    def _rewrite(self) -> None:
        """Keep only the lines within the window (at start-up: the file never grows for
        longer than a run of the daemon plus the window)."""
        self.path.parent.mkdir(mode=0o770, parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "w") as f:
            for key, (t, mid) in self._sent.items():
                f.write(f"{t:.0f}\t{key}\t{mid}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def sent(self, key: str) -> tuple[float, str] | None:
        """(when, Message-ID) of the job's mail, if it was mailed within the window."""
        return self._sent.get(key)

    def add(self, key: str, message_id: str, now: float | None = None) -> None:
        """Record a mail the SMTP server took (or may have taken); durable on return. A
        ledger that cannot be written is logged by the caller: the mail is sent already."""
        t = time.time() if now is None else now
        self._sent[key] = (t, message_id)
        self.path.parent.mkdir(mode=0o770, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o640)
        try:
            os.write(fd, f"{t:.0f}\t{key}\t{message_id}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def __len__(self) -> int:
        return len(self._sent)


def describe(entry: Any) -> str:
    """`entry` of `sent` as a note: when and under which Message-ID."""
    t, mid = entry
    return f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))}, Message-ID {mid}"
