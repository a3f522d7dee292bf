"""The simulator's oracle: what the accuracy breakdown compares attribution with.

Attribution never reads it. `simulate(oracle=True)` books every increment of a job here as it
prints it (`Oracle.book`) and writes `Oracle.lines()` to OUT/oracle.jsonl:

- each increment printed under a `:uid:host` id, as [time, target, node, uid, owner job,
  read bytes, write bytes, metadata ops, phase]: the truth of every ambiguous split;
- per phase, what it printed under ids naming its job (OST bytes, MDT operations, its first
  and last such increment, the OSTs it showed bytes on): what the data shows of it;
- per job phase its span, rates, OSTs and leak share, and the node-wide episodes: what the
  model oracle of bench/accuracy_model.py knows.

Kept apart from writer.py, which touches the disk, so that the oracle's booking reads as one
piece and the writer stays about the cluster.
"""

from __future__ import annotations

import json

from slurm_io.model import METADATA_OPS, IdClass
from slurm_io.simulate.ids import IdPlan, leak_share
from slurm_io.simulate.lustre import FileSystem
from slurm_io.simulate.phases import Burst, Phase


class Oracle:
    """The oracle's rows as the simulation runs: the blind increments, and per phase what it
    showed by its id."""

    def __init__(self, phases: list[Phase]) -> None:
        self._phases = phases
        self._index = {id(p): i for i, p in enumerate(phases)}
        self._blind: list[str] = []
        self._seen: dict[int, list[float]] = {}  # phase -> OST bytes, MDT ops, first, last
        self._osts: dict[int, set[str]] = {}  # phase -> the OSTs it showed bytes on

    def book(self, b: Burst, t: float, target: str, id_class: IdClass) -> None:
        """One increment of a job's phase: under `:uid:host`, the increment itself; under an
        id naming the job, what that phase showed by its id (and on which OSTs bytes)."""
        phase = self._index[id(b.phase)]
        nbytes = sum(s * c for s, c in b.reads) + sum(s * c for s, c in b.writes)
        if id_class == IdClass.JOB_MISSING:
            self._blind.append(json.dumps([
                t, target, b.phase.node, b.phase.uid, b.phase.job,
                sum(s * c for s, c in b.reads), sum(s * c for s, c in b.writes),
                sum(c for n, c in b.ops if b.kind == "MDT" and n in METADATA_OPS), phase]))
        elif id_class != IdClass.UNRECOVERABLE:
            acc = self._seen.setdefault(phase, [0.0, 0.0, t, t])
            if b.kind == "OST":
                acc[0] += nbytes
                if nbytes > 0:
                    self._osts.setdefault(phase, set()).add(target)
            else:
                acc[1] += sum(c for _, c in b.ops)
            acc[2], acc[3] = min(acc[2], t), max(acc[3], t)

    def lines(self, plan: IdPlan, fs: FileSystem) -> list[str]:
        """Every row of oracle.jsonl: the blind increments, what each phase showed by its
        id, and the model oracle's phases and episodes."""
        rows = list(self._blind)
        rows += [json.dumps({"phase": i, "ost_bytes": v[0], "mdt_ops": v[1],
                             "first": v[2], "last": v[3],
                             "osts": sorted(self._osts.get(i, ()))})
                 for i, v in sorted(self._seen.items())]
        rows += [json.dumps({"model_phase": i, "node": p.node, "job": p.job, "uid": p.uid,
                             "t0": p.t0, "t1": p.t1, "read_rate": p.read_rate,
                             "write_rate": p.write_rate, "leak": leak_share(plan, p.job),
                             "osts": [fs.target("OST", o).name for o in p.osts]})
                 for i, p in enumerate(self._phases) if p.job is not None and not p.login]
        rows += [json.dumps({"episode": [e.t0, e.t1], "nodes": sorted(e.nodes)})
                 for e in plan.episodes]
        return rows
