#!/usr/bin/env python3
"""A stand-in for `lctl get_param ... job_stats`: prints recorded reads, one per call.

    fake_lctl.py DIR        DIR holds <epoch>.txt reads of one server; DIR/.next counts calls
DIR/.limit (optional) holds how many reads may be printed: past it the last of them is
printed again and not counted, so a test can hold a collector at a stage without skipping
reads (tests/install/test_upgrade_doc.py).
Set FAKE_LCTL_SLEEP=seconds to sleep before printing (to kill a collector mid-read) and
FAKE_LCTL_FAIL=1 to exit 1 like an lctl that lost its targets.
"""

import os
import sys
import time
from pathlib import Path

d = Path(sys.argv[1])
files = sorted(d.glob("*.txt"), key=lambda p: float(p.stem))
counter = d / ".next"
i = int(counter.read_text()) if counter.exists() else 0
limit_file = d / ".limit"
if limit_file.exists() and i >= int(limit_file.read_text()):
    sys.stdout.write(files[int(limit_file.read_text()) - 1].read_text())
    sys.exit(0)
# atomically: a test polls the count while collectors call this (an empty file mid-write
# would read as no number)
tmp = d / f".next.{os.getpid()}"
tmp.write_text(str(i + 1))
os.replace(tmp, counter)
if os.environ.get("FAKE_LCTL_FAIL"):
    print("error: get_param: param_path 'mdt/*/job_stats': No such file", file=sys.stderr)
    sys.exit(1)
time.sleep(float(os.environ.get("FAKE_LCTL_SLEEP", "0")))
sys.stdout.write(files[min(i, len(files) - 1)].read_text())
