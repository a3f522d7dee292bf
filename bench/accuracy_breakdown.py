"""Where attribution's error lies: each ambiguous split against the simulator's oracle.

`bench/accuracy.py --breakdown` simulates with `oracle=True` (slurm_io.simulate: every
increment printed under a `:uid:host` id, with its true job) and compares every split the
batch made (attribute.core's cache: one per delta and facet) with what each candidate really
did in that delta. Bytes only (read and write facets). Never used by attribution itself.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.accuracy_model import (
    TRUTH,
    Known,
    from_the_data,
    indistinct,
    load_model,
    mean_leak,
    model_split,
    shared_by_time,
    shown_osts,
)

Key = tuple[str, str, int]  # node, target, uid
# the strictest model: what the rows show of each phase, its OSTs only those it printed on
STRICT = "the data's model, that and each phase's OSTs those it printed bytes on"


Oracle = dict[Key, tuple[list[float], list[tuple[int, float, float, int]]]]
STARTUP = 900.0  # a job's first phase: the input it reads when it begins
LONG_READ = 600.0  # a read interval this long is an outage's (collectors read every 120 s)


def load_oracle(path: Path) -> tuple[Oracle, dict[int, tuple[float, float]]]:
    """(node, target, uid) -> (sorted times, [(job, read bytes, write bytes, phase)]), and
    phase -> (OST bytes, MDT ops) that phase showed under ids naming its job."""
    by: dict[Key, list[tuple[float, int, float, float, int]]] = defaultdict(list)
    seen: dict[int, tuple[float, float]] = {}
    for line in path.read_text().splitlines():
        if not line:
            continue
        row = json.loads(line)
        if isinstance(row, dict):
            if "phase" in row:
                seen[row["phase"]] = (row["ost_bytes"], row["mdt_ops"])
            continue
        t, target, node, uid, owner, rb, wb, _md, phase = row
        by[(node, target, uid)].append((t, owner, rb, wb, phase))
    out = {}
    for k, v in by.items():
        v.sort()
        out[k] = ([r[0] for r in v], [(r[1], r[2], r[3], r[4]) for r in v])
    return out, seen


def true_split(oracle: Oracle, node: str, target: str, uid: int, a: float, b: float,
               i: int) -> tuple[dict[int, float], dict[int, float]]:
    """Facet i (0 read, 1 write bytes) of each job's increments in (a, b], and per phase."""
    got = oracle.get((node, target, uid))
    if got is None:
        return {}, {}
    times, rows = got
    out: dict[int, float] = defaultdict(float)
    phases: dict[int, float] = defaultdict(float)
    for job, rb, wb, phase in rows[bisect_right(times, a):bisect_right(times, b)]:
        out[job] += rb if i == 0 else wb
        phases[phase] += rb if i == 0 else wb
    return dict(out), dict(phases)


def breakdown(sim: Path, splits: dict[Any, Any], rows: list[dict[str, Any]],
              raw: dict[int, int]) -> dict[str, Any]:
    """Misplaced bytes (sum over deltas and jobs of |given - true|) per rule and per cause.
    `raw`: job row key -> raw id (the splits name row keys, the oracle and truth raw ids)."""
    oracle, seen = load_oracle(sim / "oracle.jsonl")
    truth = json.loads((sim / "truth.json").read_text())["jobs"]
    array_of = {int(k): v["job_id"].split("_")[0] if "_" in v["job_id"] else None
                for k, v in truth.items()}
    length = {int(k): (v["end"] or 0) - (v["start"] or 0) for k, v in truth.items()}
    began = {int(k): v["start"] or 0 for k, v in truth.items()}
    stats: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # cause -> [bytes, error]
    per_job_err: dict[int, float] = defaultdict(float)
    single_owner = [0.0, 0.0]  # bytes of ambiguous deltas one job really owned; of them wrong
    # job -> what perfect splits would change in its figure: where the owner's phase showed
    # its id somewhere (placeable), and everywhere
    fix_shown: dict[int, float] = defaultdict(float)
    fix_all: dict[int, float] = defaultdict(float)
    # of placeable deltas: those whose owner's phase showed its id on the MDT only and whose
    # job began within STARTUP of the delta's end (start-up reads of tasks that began
    # inside a blind stretch: the MDT says they read, not which OST)
    fix_startup: dict[int, float] = defaultdict(float)
    # job -> the same for the placeable splits of reads over LONG_READ (an outage's)
    fix_long: dict[int, float] = defaultdict(float)
    # job -> what the no-information bound changes (accuracy_model.indistinct): placeable
    # splits perfect but where the data cannot tell the candidates apart
    fix_bound: dict[int, float] = defaultdict(float)
    # those start-up deltas' truth and figures per job, to take them out as well: what the
    # rules reach where the MDT says a task read but nothing says which OST
    startup_true: dict[int, float] = defaultdict(float)
    startup_given: dict[int, float] = defaultdict(float)
    # of deltas no data can place (the owner's phase printed its id nowhere): per job
    blind_true: dict[int, float] = defaultdict(float)
    blind_given: dict[int, float] = defaultdict(float)
    model = load_model(sim / "oracle.jsonl")
    # name -> (what the model oracle knows, job -> what its split changes in the job's
    # figure over placeable deltas, the same taking per delta the better of it and the rules')
    data = from_the_data(model)  # each phase as the rows show it (rates read once)
    variants: dict[str, tuple[Known, dict[int, float], dict[int, float]]] = {
        name: (known, defaultdict(float), defaultdict(float)) for name, known in (
            ("the model oracle's", TRUTH),
            ("the model oracle's, OSTs known only where shown", Known(osts=data.osts)),
            ("the model oracle's, rates only as printed", Known(rates=data.rates)),
            ("the model oracle's, rates and OSTs only as printed",
             Known(osts=data.osts, rates=data.rates)),
            ("the data's model (rates, OSTs and spans only as printed)", data),
            ("the data's model, every job's leak share the mean",
             data._replace(leak=mean_leak(model))),
            (STRICT, data._replace(leak=mean_leak(model), shown_osts=shown_osts(model))))}
    once = {}
    for key, s in splits.items():  # one split per delta and facet (the batch's first)
        once.setdefault(key[:6], s)
    for key, split in once.items():
        node, target, a, b, uid, i = key
        if i == 2 or len(split.fractions) < 2:
            continue
        s = split._replace(fractions={raw.get(k, k): f for k, f in split.fractions.items()})
        tru, phases = true_split(oracle, node, target, uid, a, b, i)
        total = sum(tru.values())
        if total <= 0:
            continue
        err = 0.0
        main = max(phases, key=lambda p: phases[p])
        placeable = any(seen.get(p, (0.0, 0.0)) != (0.0, 0.0) for p in phases)
        owner = max(tru, key=lambda j: tru[j])
        ost, mdt = seen.get(main, (0.0, 0.0))
        startup = placeable and ost == 0 and mdt > 0 and b - began.get(owner, 0) <= STARTUP
        if placeable:
            bound = shared_by_time(tru, indistinct(model, node, uid, a, b, s.fractions))
            for j in set(bound) | set(s.fractions):
                fix_bound[j] += bound.get(j, 0.0) - s.fractions.get(j, 0.0) * total
            for known, fix, better in variants.values():
                _model_fix(model_split(model, node, target, uid, a, b, i, s.fractions, known),
                           s.fractions, tru, total, fix, better)
        for j in set(tru) | set(s.fractions):
            delta = tru.get(j, 0.0) - s.fractions.get(j, 0.0) * total
            e = abs(delta)
            err += e
            per_job_err[j] += e
            fix_all[j] += delta
            if placeable:
                fix_shown[j] += delta
                if b - a > LONG_READ:
                    fix_long[j] += delta
                if startup:
                    fix_startup[j] += delta
                    startup_true[j] += tru.get(j, 0.0)
                    startup_given[j] += s.fractions.get(j, 0.0) * total
            else:
                blind_true[j] += tru.get(j, 0.0)
                blind_given[j] += s.fractions.get(j, 0.0) * total
        top = max(tru.values())
        if top >= 0.99 * total:
            single_owner[0] += total
            single_owner[1] += err
        n = len(s.fractions)
        arrays = {array_of.get(j) for j in s.fractions}
        short = any(length.get(j, 0) < 1800 for j in s.fractions)
        shown = ("its I/O phase shown by id on OSTs" if ost > 0 else
                 "phase shown by id on MDT only" if mdt > 0 else
                 "phase wholly blind (no id anywhere)")
        for cause in (f"rule={s.rule}", shown,
                      "read interval > 10 min" if b - a > 600
                      else "read interval <= 10 min",
                      f"candidates={min(n, 4)}{'+' if n >= 4 else ''}",
                      f"kind={'MDT' if '-MDT' in target else 'OST'}",
                      "same array" if len(arrays) == 1 and None not in arrays
                      else "different submissions",
                      "a candidate < 30 min" if short else "all candidates >= 30 min",
                      "MDT only, owner began <= 15 min before" if startup
                      else "not (MDT only, owner began <= 15 min before)",
                      "one true owner" if top >= 0.99 * total else "several true owners"):
            stats[cause][0] += total
            stats[cause][1] += err
    attributable = sum(r["direct_truth"] + r["recovered_truth"] for r in rows)
    job_err = sum(abs(r["attributed"] - r["direct_truth"] - r["recovered_truth"]) for r in rows)
    direct_err = sum(abs(r["direct_got"] - r["direct_truth"]) for r in rows)
    ceilings = {}
    but_startup = {j: fix_shown.get(j, 0.0) - fix_startup.get(j, 0.0) for j in fix_shown}
    for name, fix in (("perfect where the owner's phase showed its id", fix_shown),
                      ("the same but the start-up splits", but_startup),
                      ("perfect everywhere", fix_all)):
        ceilings[name] = _headline(rows, fix, attributable)
    # the accuracy over what the data can place: those deltas taken out of truth and figures
    placeable = _placeable(rows, blind_true, blind_given, {}, attributable)
    # the same with the start-up splits above perfect: how far the rules are elsewhere
    startup_perfect = _placeable(rows, blind_true, blind_given, fix_startup, attributable)
    # and with those start-up splits taken out too (counted unplaceable, like the blind)
    without_startup = _placeable(rows, _plus(blind_true, startup_true),
                                 _plus(blind_given, startup_given), {}, attributable)
    # the same with the outage's long reads perfect: what they cost the per-job figures
    long_perfect = _placeable(rows, blind_true, blind_given, fix_long, attributable)
    no_information = (_placeable(rows, blind_true, blind_given, fix_bound, attributable),
                      _headline(rows, fix_bound, attributable)[0])
    models = {}
    for name, (_, fix, better) in variants.items():
        models[name] = (_placeable(rows, blind_true, blind_given, fix, attributable),
                        _headline(rows, fix, attributable)[0])
        if name in ("the model oracle's", "the model oracle's, OSTs known only where shown",
                    "the data's model (rates, OSTs and spans only as printed)", STRICT):
            models[f"per delta the better of the rules' and {name}"] = (
                _placeable(rows, blind_true, blind_given, better, attributable),
                _headline(rows, better, attributable)[0])
    return {"attributable": attributable, "ceilings": ceilings, "placeable": placeable,
            "models": models,
            "placeable_startup_perfect": startup_perfect,
            "placeable_without_startup": without_startup, "no_information": no_information,
            "placeable_long_perfect": long_perfect,
            "job_error": job_err, "direct_error": direct_err,
            "stats": dict(stats), "single_owner": single_owner,
            "per_job_ambiguous_error": dict(per_job_err)}


def _model_fix(model: dict[int, float] | None, rules: dict[int, float],
               tru: dict[int, float], total: float, fix_model: dict[int, float],
               fix_better: dict[int, float]) -> None:
    """Add what the model oracle's split changes against the rules' (its own where it
    expects something; the rules' where it does not), and the better of the two."""
    if model is None:
        return
    jobs = set(tru) | set(rules) | set(model)
    err_rules = sum(abs(tru.get(j, 0.0) - rules.get(j, 0.0) * total) for j in jobs)
    err_model = sum(abs(tru.get(j, 0.0) - model.get(j, 0.0) * total) for j in jobs)
    for j in jobs:
        change = (model.get(j, 0.0) - rules.get(j, 0.0)) * total
        fix_model[j] += change
        if err_model < err_rules:
            fix_better[j] += change


def _headline(rows: list[dict[str, Any]], fix: dict[int, float], attributable: float
              ) -> tuple[float, float]:
    """Byte accuracy of all jobs, and their p90 error, with `fix` (job -> bytes to add)
    applied: a ceiling's, or the model oracle's."""
    errs, abs_err = [], 0.0
    for r in rows:
        t = r["direct_truth"] + r["recovered_truth"]
        e = abs(r["attributed"] + fix.get(int(r["job"]), 0.0) - t)
        abs_err += e
        if t > 0:
            errs.append(e / t)
    errs.sort()
    return 1 - abs_err / max(1, attributable), errs[int(len(errs) * 0.9)]


def _plus(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    """Per-job sums of two per-job figures."""
    return {j: a.get(j, 0.0) + b.get(j, 0.0) for j in a.keys() | b.keys()}


def _placeable(rows: list[dict[str, Any]], blind_true: dict[int, float],
               blind_given: dict[int, float], fix: dict[int, float], attributable: float
               ) -> tuple[float, float, float, float]:
    """Byte accuracy, per-job median and p90 error over the bytes the data can place (the
    deltas whose owner's phase printed its id nowhere taken out of truth and figures),
    with `fix` (job -> true - given) applied; and the share taken out."""
    errs, abs_err, base = [], 0.0, 0.0
    for r in rows:
        j = int(r["job"])
        t = r["direct_truth"] + r["recovered_truth"] - blind_true.get(j, 0.0)
        e = abs(r["attributed"] - blind_given.get(j, 0.0) + fix.get(j, 0.0) - t)
        abs_err += e
        base += t
        if t > 0:
            errs.append(e / t)
    errs.sort()
    return (1 - abs_err / max(1.0, base), errs[len(errs) // 2], errs[int(len(errs) * 0.9)],
            1 - base / max(1, attributable))


def report(b: dict[str, Any]) -> None:
    gib = 1 << 30
    att = max(1.0, b["attributable"])
    print(f"  error in per-job sums {100 * b['job_error'] / att:.2f} % of truth "
          f"(direct part {100 * b['direct_error'] / att:.2f} %)")
    acc, med, p90, out = b["placeable"]
    print(f"  over the bytes the data can place ({100 * out:.2f} % of the truth taken out: "
          f"ambiguous deltas whose owner's I/O phase printed its id nowhere): byte accuracy "
          f"{100 * acc:.2f} %, per-job median / p90 {100 * med:.2f} / {100 * p90:.2f} %")
    acc, med, p90, _ = b["placeable_startup_perfect"]
    print(f"  the same with the start-up splits perfect (MDT-only phases of jobs begun <= 15 min "
          f"before the delta): byte accuracy {100 * acc:.2f} %, per-job median / p90 "
          f"{100 * med:.2f} / {100 * p90:.2f} %")
    acc, med, p90, out = b["placeable_without_startup"]
    print(f"  the same with those start-up splits taken out as well ({100 * out:.2f} % of the "
          f"truth out in all): byte accuracy {100 * acc:.2f} %, per-job median / p90 "
          f"{100 * med:.2f} / {100 * p90:.2f} %")
    acc, med, p90, _ = b["placeable_long_perfect"]
    print(f"  the same with the splits of reads over {LONG_READ / 60:.0f} min (an outage's) "
          f"perfect instead: byte accuracy {100 * acc:.2f} %, per-job median / p90 "
          f"{100 * med:.2f} / {100 * p90:.2f} %")
    (acc, med, p90, _), head = b["no_information"]
    first = next(iter(b["ceilings"].values()))[0]
    print(f"  the no-information bound (placeable splits perfect, but where candidates read or "
          f"wrote shown on the MDT only, which the data cannot tell apart: there by their "
          f"seconds): byte accuracy {100 * acc:.2f} %, per-job median / p90 {100 * med:.2f} / "
          f"{100 * p90:.2f} %; headline {100 * head:.2f} %, {100 * (first - head):.2f} points "
          f"from the first ceiling")
    print("  model oracles (bench/accuracy_model.py), each splitting the placeable deltas by "
          "every candidate's expected blind bytes from its phases, as known to it (never each "
          "increment's draw):")
    for name, ((acc, med, p90, _), head) in b["models"].items():
        print(f"    with {name} split: over placeable bytes {100 * acc:.2f} %, per-job median / "
              f"p90 {100 * med:.2f} / {100 * p90:.2f} %; headline {100 * head:.2f} %")
    for name, (acc, p90) in b["ceilings"].items():
        print(f"  ceiling, splits {name}: byte accuracy {100 * acc:.2f} %, p90 {100 * p90:.2f} %")
    print("  ambiguous splits vs oracle: cause, bytes (GiB, % of truth), misplaced "
          "(sum |given - true|, % of truth, % of those bytes)")
    for cause, (nbytes, err) in sorted(b["stats"].items()):
        print(f"    {cause:28s} {nbytes / gib:9.1f} GiB {100 * nbytes / att:6.2f} %  "
              f"misplaced {err / gib:8.1f} GiB {100 * err / att:6.2f} % "
              f"({100 * err / max(1.0, nbytes):5.1f} %)")
