"""Seeded, deterministic simulator of a Slurm cluster on Lustre, for tests, demos, benchmarks.

`simulate(out_dir, start=...)` writes what the collector and Slurm would have seen: per-server
`lctl get_param` job_stats captures in every Lustre release format, the sacct job list, and the
ground truth of every job's I/O. Modules: `cluster` (workload), `ids` (job_id printing and its
faults), `lustre` (job_stats model and truth ledger), `writer` (the run and the only I/O).
"""

from slurm_io.simulate.writer import simulate

__all__ = ["simulate"]
