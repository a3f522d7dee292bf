"""A model of Lustre's job_stats on every target, and the ledger of what happened to each byte.

Why model it instead of just summing: the collector has to reconstruct I/O from cumulative
counters whose entries vanish and come back. The model keeps exactly Lustre's rules: entries
are keyed by the printed job_id, counters are cumulative from the entry's creation
(`start_time`), `snapshot_time` is the last update, and `lprocfs_job_cleanup` (run at most every
cleanup_interval/2, on updates and on reads) frees entries idle for more than
`job_cleanup_interval` (600 s); the next I/O of that id re-creates the entry from zero.

The ledger books every increment to its owner (raw job id or `uid:<n>` outside jobs) and id
class as it is generated, and books it again as `lost_in_lustre` when its entry is freed before
any collector read showed it (possible only when reads were missed: an outage). So
`generated - lost` is exactly what an ideal collector reading every file can recover. Resets a
collector cannot see as an absence (freed and re-created between two of its reads) are listed
as `resets_without_absence`: only `start_time` (2.15+) or a lower counter reveals them, so a
collector on a <= 2.14 server may take `new - old` for a delta that is really `new`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from slurm_io.model import METADATA_OPS, ByteStats, Entry, IdClass
from slurm_io.parse.render import counter_names, format_job_id, param_name

CLEANUP_INTERVAL = 600.0
FS_NAME = "scratch"
OSS_RELEASES: tuple[str, ...] = ("2.12", "2.14", "2.16", "2.15.0", "2.17", "2.10")
MDS_RELEASE = "2.15.2"
OSTS_PER_OSS = 2

Owner = int | str  # raw Slurm job id, or "uid:<n>" for I/O outside any job
METRICS: tuple[str, ...] = ("read_bytes", "write_bytes", "metadata_ops")


class Server(NamedTuple):
    name: str
    release: str
    boot_time: float  # epoch; only visible in 2.15.0 output (boot-relative times)
    targets: tuple[tuple[str, str], ...]  # (target, kind)


def ost_name(index: int) -> str:
    return f"{FS_NAME}-OST{index:04x}"


def plan_servers(rng: random.Random, n_oss: int, start: float) -> tuple[Server, ...]:
    """mds01 (one MDT) and oss01..ossNN (two OSTs each), with mixed Lustre releases."""
    def boot() -> float:
        return round(start - rng.uniform(2.0, 60.0) * 86400.0, 3)

    servers = [Server("mds01", MDS_RELEASE, boot(), ((f"{FS_NAME}-MDT0000", "MDT"),))]
    for i in range(n_oss):
        targets = tuple((ost_name(i * OSTS_PER_OSS + j), "OST") for j in range(OSTS_PER_OSS))
        servers.append(Server(f"oss{i + 1:02d}", OSS_RELEASES[i % len(OSS_RELEASES)], boot(),
                              targets))
    return tuple(servers)


def hist_label(size: int) -> str:
    """Lustre's power-of-two bucket label of a request size: 4096 -> 4K, 1 MiB -> 1M."""
    bucket = 1
    while bucket < size:
        bucket <<= 1
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if bucket >= 1 << shift:
            return f"{bucket >> shift}{unit}"
    return str(bucket)


class _Bytes:
    """Cumulative statistics of one byte counter."""

    __slots__ = ("hist", "max", "min", "samples", "sum", "sumsq")

    def __init__(self) -> None:
        self.samples = 0
        self.min = 0
        self.max = 0
        self.sum = 0
        self.sumsq = 0
        self.hist: dict[int, int] = {}

    def add(self, size: int, count: int) -> None:
        self.min = size if self.samples == 0 else min(self.min, size)
        self.max = max(self.max, size)
        self.samples += count
        self.sum += size * count
        self.sumsq += size * size * count
        self.hist[size] = self.hist.get(size, 0) + count

    def stats(self) -> ByteStats:
        hist = tuple((hist_label(s), self.hist[s]) for s in sorted(self.hist))
        return ByteStats(self.samples, self.min, self.max, self.sum, self.sumsq, hist)


class _Entry:
    """One live job_stats entry; `unread` holds what no collector read has shown yet."""

    __slots__ = ("id_class", "job_id", "ops", "rb", "snapshot", "start", "unread", "wb")

    def __init__(self, job_id: str, id_class: IdClass, now: float) -> None:
        self.job_id = job_id
        self.id_class = id_class
        self.start = now
        self.snapshot = now
        self.ops: dict[str, int] = {}
        self.rb = _Bytes()
        self.wb = _Bytes()
        self.unread: dict[tuple[Owner, str], list[int]] = {}


@dataclass
class Ledger:
    """Ground truth, booked as the simulator generates increments."""

    generated: dict[tuple[Owner, str], list[int]] = field(default_factory=dict)
    lost: dict[tuple[Owner, str], list[int]] = field(default_factory=dict)
    created: dict[str, int] = field(default_factory=dict)  # entries created per id class
    appearances: dict[tuple[str, str], int] = field(default_factory=dict)  # (kind, class)
    resets_without_absence: list[dict[str, object]] = field(default_factory=list)

    @staticmethod
    def _add(book: dict[tuple[Owner, str], list[int]], key: tuple[Owner, str],
             values: Iterable[int]) -> None:
        acc = book.setdefault(key, [0, 0, 0])
        for i, v in enumerate(values):
            acc[i] += v


class Target:
    """job_stats of one MDT or OST."""

    def __init__(self, name: str, kind: str, server: Server) -> None:
        self.name = name
        self.kind = kind
        self.server = server
        self.entries: dict[str, _Entry] = {}
        self.last_cleanup = float("-inf")
        self.last_read_ids: frozenset[str] = frozenset()
        self.freed_unseen: dict[str, float] = {}  # shown by the last read, freed since

    def cleanup(self, now: float, ledger: Ledger) -> None:
        """Lustre's lprocfs_job_cleanup: at most every interval/2, free idle entries."""
        if now < self.last_cleanup + CLEANUP_INTERVAL / 2:
            return
        self.last_cleanup = now
        oldest = now - CLEANUP_INTERVAL
        for job_id in [k for k, e in self.entries.items() if e.snapshot < oldest]:
            entry = self.entries.pop(job_id)
            for key, values in entry.unread.items():
                Ledger._add(ledger.lost, key, values)
            if job_id in self.last_read_ids:
                self.freed_unseen[job_id] = now

    def log(self, now: float, job_id: str, id_class: IdClass, owner: Owner,
            ops: tuple[tuple[str, int], ...], reads: tuple[tuple[int, int], ...],
            writes: tuple[tuple[int, int], ...], ledger: Ledger) -> None:
        """Add one increment at `now` (lprocfs_job_stats_log)."""
        self.cleanup(now, ledger)
        entry = self.entries.get(job_id)
        if entry is None:
            entry = self.entries[job_id] = _Entry(job_id, id_class, now)
            ledger.created[id_class.label] = ledger.created.get(id_class.label, 0) + 1
            freed = self.freed_unseen.pop(job_id, None)
            if freed is not None:
                ledger.resets_without_absence.append({
                    "server": self.server.name, "target": self.name, "job_id": job_id,
                    "raw_id": format_job_id(job_id, self.server.release),
                    "freed": freed, "recreated": now,
                })
        entry.snapshot = now
        md = 0
        for name, count in ops:
            entry.ops[name] = entry.ops.get(name, 0) + count
            if self.kind == "MDT" and name in METADATA_OPS:
                md += count
        rb = wb = 0
        for size, count in reads:
            entry.rb.add(size, count)
            rb += size * count
        for size, count in writes:
            entry.wb.add(size, count)
            wb += size * count
        if self.kind == "OST":  # 2.14+ also count the RPCs as `read`/`write` operations
            entry.ops["read"] = entry.rb.samples
            entry.ops["write"] = entry.wb.samples
        key = (owner, id_class.label)
        Ledger._add(ledger.generated, key, (rb, wb, md))
        unread = entry.unread.setdefault(key, [0, 0, 0])
        unread[0] += rb
        unread[1] += wb
        unread[2] += md

    def read(self, now: float, ledger: Ledger) -> list[Entry]:
        """What `lctl get_param` shows at `now` (creation order), marking it as seen."""
        self.cleanup(now, ledger)
        release = self.server.release
        names = counter_names(release, self.kind)
        out = []
        for entry in self.entries.values():
            entry.unread.clear()
            key = (self.kind, entry.id_class.label)
            ledger.appearances[key] = ledger.appearances.get(key, 0) + 1
            values = dict(entry.ops)
            values["read_bytes"] = entry.rb.samples
            values["write_bytes"] = entry.wb.samples
            out.append(Entry(
                target=self.name,
                raw_id=format_job_id(entry.job_id, release),
                job_id=entry.job_id,
                snapshot_time=entry.snapshot,
                start_time=entry.start,
                names=names,
                samples=tuple(values.get(n, 0) for n in names),
                stats={"read_bytes": entry.rb.stats(), "write_bytes": entry.wb.stats()},
            ))
        self.last_read_ids = frozenset(self.entries)
        self.freed_unseen.clear()
        return out

    def unread_total(self) -> list[int]:
        total = [0, 0, 0]
        for entry in self.entries.values():
            for values in entry.unread.values():
                for i, v in enumerate(values):
                    total[i] += v
        return total


class FileSystem:
    """All targets of the simulated file system, grouped by server."""

    def __init__(self, servers: tuple[Server, ...]) -> None:
        self.servers = {s.name: s for s in servers}
        self.targets: dict[str, list[Target]] = {
            s.name: [Target(name, kind, s) for name, kind in s.targets] for s in servers
        }
        self.mdt = self.targets["mds01"][0]
        self.osts = [t for s in servers[1:] for t in self.targets[s.name]]

    def target(self, kind: str, ost: int) -> Target:
        return self.mdt if kind == "MDT" else self.osts[ost % len(self.osts)]

    def read(self, server: str, now: float, ledger: Ledger
             ) -> list[tuple[str, str, list[Entry]]]:
        """(param, kind, entries) of every target of `server`: one `lctl get_param` call."""
        return [(param_name(t.name, t.kind), t.kind, t.read(now, ledger))
                for t in self.targets[server]]

    def unread_total(self) -> list[int]:
        total = [0, 0, 0]
        for targets in self.targets.values():
            for t in targets:
                for i, v in enumerate(t.unread_total()):
                    total[i] += v
        return total
