"""Where reads come from: the live `lctl` command, or captured reads replayed from a folder.

Replay layout (what `--from DIR` reads and `jobio simulate` writes):
`DIR/<server>/<epoch>.txt`, each file the verbatim lctl output of that server at that unix time.
"""

from __future__ import annotations

import logging
import math
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from slurm_io import clock, procs
from slurm_io.model import Entry, ParseResult
from slurm_io.parse.jobstats import MAX_TIME, Parser
from slurm_io.text import clean

log = logging.getLogger("slurm_io.collect")

READ_PIECE = 1 << 20


class CapturedRead(NamedTuple):
    server: str
    read_time: float
    path: Path


class LctlError(RuntimeError):
    """The lctl command failed or timed out; the cycle is skipped (next one covers it)."""


def read_lctl(command: str, timeout: float,
              previous: Mapping[str, Mapping[str, Entry]] | None = None
              ) -> tuple[float, ParseResult]:
    """Run the command and parse its output while it streams (bounded memory).

    The read time is taken when the command starts: that is when the counters are sampled.
    """
    argv = shlex.split(command)
    t, started = clock.now(), time.time()  # the read's time; the timeout's start (wall)
    parser = Parser(previous=previous)
    try:
        # bytes: the parser works on lctl's bytes (no decode/encode of hundreds of MB)
        for piece in procs.stream(argv, timeout=timeout, piece=READ_PIECE, started=started):
            parser.feed(piece)
    except OSError as e:
        raise LctlError(f"cannot run {argv[0]!r}: {e}") from e
    except procs.Timeout as e:
        raise LctlError(f"{argv[0]} did not finish within {timeout:.0f} s") from e
    except procs.Failed as e:
        raise LctlError(f"{argv[0]} exited {e.returncode}: {e.stderr.strip()[:500]}") from e
    return t, parser.finish()


def captured_reads(root: Path) -> list[CapturedRead]:
    """Every `<server>/<epoch>.txt` under root, in time order (then server name).

    A server folder whose name is not UTF-8 gives a cleaned collector name (slurm_io.text);
    a file whose name is no possible time (`nan.txt`, `1e30.txt`) is left out, with a line.
    """
    reads: list[CapturedRead] = []
    for server_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        server = clean(server_dir.name)
        for f in server_dir.glob("*.txt"):
            try:
                t = float(f.stem)
            except ValueError:
                continue
            if not (math.isfinite(t) and 0 <= t <= MAX_TIME):
                log.warning("%s: not a read time, file left out", clean(str(f)))
                continue
            reads.append(CapturedRead(server, t, f))
    reads.sort(key=lambda r: (r.read_time, r.server))
    return reads


def parse_file(path: Path,
               previous: Mapping[str, Mapping[str, Entry]] | None = None) -> ParseResult:
    parser = Parser(previous=previous)
    with open(path, "rb") as f:
        while piece := f.read(READ_PIECE):
            parser.feed(piece)
    return parser.finish()
