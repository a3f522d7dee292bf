"""The soak's `lctl get_param obdfilter.*.job_stats` (bench/soak.py): a read generated at the
daemons' clock (slurm_io.clock, SLURM_IO_CLOCK), not replayed from files.

    soak_lctl.py SERVER ENTRIES LOG

SERVER's one OST holds ENTRIES job entries at any time, slot i running jobs of 6 hours one
after another (staggered, so jobs start and end all the time, as on a cluster); an entry's
counters grow with the time since its job started, so each read moves every entry. Each
call appends "read_time n_entries" to LOG: what the soak compares the stored rows with.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from slurm_io import clock
from slurm_io.model import ByteStats, Entry
from slurm_io.parse.render import counter_names, param_name, render_read, render_target

RELEASE = "2.16"
JOB_SECONDS = 6 * 3600.0
NODES = 2000


def entries(server: str, n: int, now: float) -> list[Entry]:
    """The entries the server shows at `now`: slot i's current job and what it did so far."""
    target = f"soak-OST{int(server[-2:]):04x}"
    names = counter_names(RELEASE, "OST")
    out = []
    for i in range(n):
        phase = i * JOB_SECONDS / n
        run = int((now + phase) // JOB_SECONDS)
        start = run * JOB_SECONDS - phase
        job = 1_000_000 + (run % 100_000) * n + i
        uid = 2000 + i % 300
        node = f"c{(i * 7 + run) % NODES:04d}"
        elapsed = max(1.0, now - start)
        writes = 1 + int(elapsed * (1 + i % 7))  # 4 KiB..: writes grow with the job's age
        reads = 1 + int(elapsed * (1 + i % 3) / 2)
        samples = {"write_bytes": writes, "read_bytes": reads, "write": writes, "read": reads,
                   "punch": 1, "setattr": 1 + int(elapsed) // 3600}
        stats = {"write_bytes": ByteStats(writes, 4096, 1 << 20, writes * 65536, None, None),
                 "read_bytes": ByteStats(reads, 4096, 1 << 20, reads * 65536, None, None)}
        raw = f"{job}:{uid}:{node}"
        out.append(Entry(target, raw, raw, now, start, names,
                         tuple(samples.get(k, 0) for k in names), stats))
    return out


def main() -> None:
    server, n, log = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
    now = clock.now()
    read = entries(server, n, now)
    sys.stdout.write(render_read([render_target(param_name(read[0].target, "OST"), read,
                                                RELEASE, "OST")]))
    with log.open("a") as f:
        f.write(f"{now:.3f} {len(read)}\n")


if __name__ == "__main__":
    main()
