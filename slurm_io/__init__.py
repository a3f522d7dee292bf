"""slurm-io: per-job Lustre I/O accounting for Slurm clusters.

Pipeline, one package per stage: parse -> repair -> delta -> store -> (attribute -> report).
"""

__version__ = "0.1.0"
