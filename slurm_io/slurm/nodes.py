"""Slurm node lists -> short host names, the names the `host` table and job_ids use.

Slurm prints compressed lists (`c[0001-0003,0007]`, `node[01-03],gpu02`); Lustre's `%H` and
the collector's host dimension use short names, so every node name is expanded with
python-hostlist (never by hand: ranges, padding and nested lists have many corner cases) and
cut at the first dot. In the Slurm seam (pure, no command run): both jobs (sacct text, hook
environments) and slurm.sacct_json read node lists, and jobs imports slurm, never the reverse.
"""

from __future__ import annotations

import re
from functools import lru_cache

import hostlist

# What sacct prints for a job that never got nodes (pending, cancelled while pending).
NO_NODES = frozenset({"", "None assigned", "(null)", "None"})


_NOT_IN_NAMES = re.compile(r"[\s\x00-\x1f\x7f]")


class NodeListError(ValueError):
    """A node list python-hostlist cannot expand."""


def short_host(name: str) -> str:
    """`node01.cluster.example.org` -> `node01` (names are kept short everywhere)."""
    return name.split(".", 1)[0]


@lru_cache(maxsize=8192)
def expand_nodes(text: str) -> tuple[str, ...]:
    """Expanded, shortened, de-duplicated node names in Slurm's order; () for no nodes.

    Cached: the same list (a whole partition, a popular node set) recurs in thousands of
    sacct lines, and expansion is the most expensive step of parsing one.
    """
    text = text.strip()
    if text in NO_NODES:
        return ()
    if _NOT_IN_NAMES.search(text):
        # no node name holds one; and python-hostlist recurses without end on some (a
        # newline inside brackets: `node[02-0\n3]`)
        raise NodeListError(f"bad node list {text!r}: whitespace or control character")
    try:
        names = hostlist.expand_hostlist(text)
    except (hostlist.BadHostlist, RecursionError) as e:
        raise NodeListError(f"bad node list {text!r}: {e}") from e
    return tuple(dict.fromkeys(short_host(n) for n in names if n))
