"""The names of Lustre's job_stats counters, and which are bytes or metadata operations.

A leaf of constants only: slurm_io.model re-exports them, but the readers that need just the
names (report.show and report.counters, on the path of `jobio --server URL JOBID` on a login
node) import them from here without model's record types and enums (issue 25: start-up).
"""

from __future__ import annotations

# Lustre counters whose `sum` is a byte count. Their min/max/sum/sumsq/hist are kept because
# they give the I/O size profile (mean size, spread, small-vs-large requests).
BYTE_COUNTERS: tuple[str, ...] = ("read_bytes", "write_bytes")

# Operation counters known from Lustre 2.10 .. 2.17 (MDT and OST). Only `samples` is kept for
# them. A counter not in this list is an "unknown counter": it is still kept (in `extra`).
OP_COUNTERS: tuple[str, ...] = (
    # MDT
    "open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr",
    "setattr", "getxattr", "setxattr", "statfs", "sync", "samedir_rename", "crossdir_rename",
    "parallel_rename_file", "parallel_rename_dir", "rename_trylocks", "punch", "migrate",
    "fallocate",
    # OST (getattr, setattr, punch, sync, statfs shared with MDT)
    "read", "write", "destroy", "create", "get_info", "set_info", "quotactl", "prealloc",
)

# Metadata operations in LASSi's sense (everything on an MDT that is not data movement).
METADATA_OPS: frozenset[str] = frozenset(
    {
        "open", "close", "mknod", "link", "unlink", "mkdir", "rmdir", "rename", "getattr",
        "setattr", "getxattr", "setxattr", "statfs", "sync", "samedir_rename",
        "crossdir_rename", "parallel_rename_file", "parallel_rename_dir", "rename_trylocks",
        "migrate", "fallocate",
    }
)

KNOWN_COUNTERS: frozenset[str] = frozenset(BYTE_COUNTERS) | frozenset(OP_COUNTERS)
