"""The command line's logging: one line per record on stderr.

Its own module so that the client mode of a login node (`jobio --server ... JOBID`), which
logs nothing, does not import logging and traceback (issue 25: start-up).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from slurm_io.text import log_continuation, log_text


class OneLineRecords(logging.Formatter):
    """Every log record is one line whatever its arguments held (slurm_io.text.log_text);
    a traceback follows on lines marked `  | `. Logs are a door too (docs/security.md): a
    job name or a request path with a newline once wrote a well-formed false record."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        saved = record.message
        record.message = log_text(saved)
        try:
            return super().formatMessage(record)
        finally:
            record.message = saved

    def formatException(self, ei: Any) -> str:
        return log_continuation(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return log_continuation(super().formatStack(stack_info))


def setup_logging(verbose: int) -> None:
    """Every record on stderr, one line each (OneLineRecords), at INFO or `-v`'s level."""
    level = logging.WARNING - 10 * verbose if verbose else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineRecords("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=max(level, logging.DEBUG), handlers=[handler])
