"""Each role's installed size and `jobio collect --help` start time (docs/deploy.md).

    .venv/bin/python bench/bench_install.py [--runs 11] [--role client ...]

Follows docs/deploy.md's "Install per role" as tests/install does (wheels built from this
checkout, then each role's block into a venv of /usr/bin/python3, in a temp dir), then:
size = `du -sk` of the role's venv minus that of an empty venv of the same Python (both
with pip, as `python3 -m venv` makes them); start time = the whole `jobio collect --help`
process, wall clock, median of N runs alternated with `python -c pass` of the same venv
(the interpreter's own floor, printed beside it). --role (repeatable) measures only those
roles (the suite's small form: one role, --runs 1); by default every role of the document.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.install.roles import (
    DEPLOY_DOC,
    build_as_documented,
    doc_blocks,
    install_as_documented,
)


def du_kib(path: Path) -> int:
    out = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--role", action="append", metavar="NAME",
                    help="only this role of docs/deploy.md (repeatable; default: every role)")
    args = ap.parse_args()
    _, blocks = doc_blocks(DEPLOY_DOC.read_text())
    unknown = sorted(set(args.role or ()) - set(blocks))
    if unknown:
        ap.error(f"no role {', '.join(unknown)} in {DEPLOY_DOC.name} (roles: "
                 f"{', '.join(blocks)})")
    roles = [r for r in blocks if not args.role or r in args.role]
    work = Path(tempfile.mkdtemp(prefix="slurm-io-bench-install-", dir="/tmp"))
    work.chmod(0o755)  # the client's block runs `jobio` as nobody
    try:
        t0 = time.perf_counter()
        wheels = build_as_documented(work)
        print(f"build block: {time.perf_counter() - t0:.1f} s")
        empty = work / "empty"
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(empty)], check=True)
        base = du_kib(empty)
        print(f"empty venv: {base / 1024:.1f} MiB")
        print(f"{'role':10} {'install s':>9} {'size MiB':>9} {'collect --help ms':>18} "
              f"{'python -c pass ms':>18}")
        for role in roles:
            t0 = time.perf_counter()
            bin_dir = install_as_documented(wheels, role, work / role)
            took = time.perf_counter() - t0
            size = (du_kib(work / role) - base) / 1024
            jobio = [str(bin_dir / "jobio"), "collect", "--help"]
            bare = [str(bin_dir / "python"), "-c", "pass"]
            wall(jobio)  # warm the page cache and the bytecode
            runs_j, runs_p = [], []
            for _ in range(args.runs):
                runs_j.append(wall(jobio))
                runs_p.append(wall(bare))
            print(f"{role:10} {took:9.1f} {size:9.1f} "
                  f"{statistics.median(runs_j) * 1000:18.0f} "
                  f"{statistics.median(runs_p) * 1000:18.0f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
