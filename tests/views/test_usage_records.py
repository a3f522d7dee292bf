"""`jobio usage`'s records: the JSON a read service sends makes the same records again, so a
client prints the same table as a local command (usage.Usage, unattributed.LoadSplit)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from slurm_io.model import IdClass
from slurm_io.report import unattributed
from slurm_io.report.counters import SUM_COLUMNS
from slurm_io.report.sql import ExtraSum, UsageSum
from slurm_io.report.usage import Usage, counted, render_table, summarise
from slurm_io.store.problems import SourceProblems

S, E = datetime(2026, 11, 18, tzinfo=UTC), datetime(2026, 11, 19, tzinfo=UTC)


def _sums(**given: int) -> tuple[int, ...]:
    return tuple(given.get(name, 0) for name in SUM_COLUMNS)


def _usage(problems: bool) -> Usage:
    rows = [UsageSum("scratch", int(IdClass.EXACT), 3, _sums(read_bytes=5 << 20, open=7)),
            UsageSum("scratch", int(IdClass.SYSTEM), 2, _sums(write_bytes=3 << 30)),
            UsageSum(None, int(IdClass.EXACT), 1, _sums(read_bytes=1, close=2))]
    extra = [ExtraSum("scratch", int(IdClass.EXACT), "fallocate", 4)]
    p = counted([SourceProblems("sacct", 2, 1), SourceProblems("spool", 1, 0)])
    return summarise(S, E, rows, extra, p if problems else None)


def test_usage_sums_fold_into_classes_filesystems_and_totals() -> None:
    u = _usage(problems=True)
    assert u.rows == 6 and sum(u.rows_by_class.values()) == u.rows
    assert u.totals["read_bytes"] == (5 << 20) + 1 and u.totals["fallocate"] == 4
    for counter in ("read_bytes", "write_bytes", "open", "close", "fallocate"):
        assert sum(c.get(counter, 0) for c in u.by_class.values()) == u.totals[counter]
        assert sum(f.get(counter, 0) for f in u.by_fs.values()) == u.totals[counter]
    assert set(u.by_fs) == {"scratch", "-"}  # a delta of no known filesystem
    assert u.problems is not None and (u.problems.total, u.problems.losses) == (3, 1)


def test_usage_through_json_is_the_same_record_and_table() -> None:
    for problems in (True, False):
        u = _usage(problems)
        doc = json.loads(json.dumps(u.as_json()))  # what the service sends
        assert Usage.from_json(doc) == u
        assert render_table(Usage.from_json(doc)) == render_table(u)
        assert list(doc) == ["start", "end", "problems", "rows", "rows_by_class", "totals",
                             "by_class", "by_fs"]


def test_load_split_through_json_is_the_same_record_and_lines() -> None:
    f = {"read_bytes": 10, "write_bytes": 20, "metadata_ops": 3}
    a = unattributed.LoadSplit(
        total={k: 6 * v for k, v in f.items()}, jobs=dict(f), recovered=dict(f),
        unclaimed_job_missing=dict(f), unknown_job_ids=dict(f), nobody=dict(f),
        by_user={"alice": dict(f)}, by_host={"cn001": dict(f)})
    doc = json.loads(json.dumps(a.as_json()))
    assert unattributed.LoadSplit.from_json(doc) == a
    assert unattributed.render(unattributed.LoadSplit.from_json(doc)) == unattributed.render(a)
    assert [k for k in doc if k not in ("by_user", "by_host")] == ["total",
                                                                  *unattributed.GROUPS]
