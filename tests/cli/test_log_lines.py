"""Logs are a door (docs/security.md): whatever text a record's arguments hold -- a job name,
a request path, an exception message a user's input shaped -- the `jobio` log formatter
(cli/logs.OneLineRecords, on every daemon's stderr) writes one line per record, and a
traceback only on lines marked `  | `, so that no user text can start a false record."""

from __future__ import annotations

import io
import logging
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_io.cli.logs import OneLineRecords

RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [\w.]+: ")


def _logged(emit) -> list[str]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(OneLineRecords("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log = logging.getLogger("slurm_io.test_log_lines")
    log.propagate = False
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    emit(log)
    return out.getvalue().splitlines()


def test_a_forged_record_in_a_job_name_stays_inside_its_own_line() -> None:
    name = "x\n2026-11-25 19:00:00,000 INFO slurm_io.service.app: GET /v1/show uid=0 200\r\x1b[2J"
    lines = _logged(lambda log: log.warning("job %s: %s", 7001, name))
    assert len(lines) == 1 and RECORD.match(lines[0])
    assert lines[0].endswith("job 7001: x\\x0a2026-11-25 19:00:00,000 INFO slurm_io.service.app"
                             ": GET /v1/show uid=0 200\\x0d\\x1b[2J")


def test_a_traceback_is_on_marked_lines_only() -> None:
    def emit(log: logging.Logger) -> None:
        try:
            raise ValueError("bad name 'a\n2026-11-25 19:00:00,000 INFO forged: yes'")
        except ValueError:
            log.exception("job %s: unexpected error", 7001)

    lines = _logged(emit)
    assert RECORD.match(lines[0]) and lines[0].endswith("job 7001: unexpected error")
    assert len(lines) > 2 and all(ln.startswith("  | ") for ln in lines[1:]), lines
    assert lines[-2:] == ["  | ValueError: bad name 'a",
                          "  | 2026-11-25 19:00:00,000 INFO forged: yes'"]  # marked, not a record
    assert not any(RECORD.match(ln) for ln in lines[1:])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_one_record_line(text: str) -> None:
    lines = _logged(lambda log: log.info("%s", text))
    assert len(lines) == 1 and RECORD.match(lines[0])
