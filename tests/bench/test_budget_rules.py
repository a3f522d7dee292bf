"""bench/budget.py's judgement (pure): a figure fails over its budget or >15 % worse than the
committed one, in the direction that is worse for it; the README table is generated."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.budget_rules import (  # noqa: E402
    BEGIN,
    END,
    FIGURES,
    markdown,
    merged,
    table,
    verdict,
)


def test_lower_is_better_figure() -> None:
    assert verdict("hook", 150.0, None) == ""
    assert verdict("hook", 201.0, None) == "over budget"
    assert verdict("hook", 114.0, 100.0) == ""  # 14 % worse: within the tolerance
    assert verdict("hook", 116.0, 100.0) == "16 % worse than committed"
    assert verdict("hook", 250.0, 100.0) == "over budget, 150 % worse than committed"


def test_higher_is_better_figure() -> None:
    assert verdict("parse_ost", 120.0, None) == ""
    assert verdict("parse_ost", 99.0, None) == "over budget"
    assert verdict("parse_ost", 120.0, 130.0) == ""  # 8 % slower
    assert verdict("parse_ost", 110.0, 130.0) == "18 % worse than committed"


def test_figure_without_budget_is_compared_with_committed_only() -> None:
    assert FIGURES["show_process"].budget is None
    assert verdict("show_process", 10_000.0, None) == ""
    assert verdict("show_process", 130.0, 100.0) == "30 % worse than committed"


def test_table_counts_failures_and_small_runs_judge_nothing() -> None:
    figures = {"hook": 300.0, "parse_ost": 150.0}
    lines, failed = table(figures, {"parse_ost": 140.0}, judge=True)
    assert failed == 1 and len(lines) == 3
    assert lines[1].endswith("ok") and lines[2].endswith("over budget")  # FIGURES' order
    assert table(figures, {}, judge=False)[1] == 0


def test_markdown_is_one_row_per_measured_figure_between_markers() -> None:
    doc = {"measured": "2026-11-25 19:00 UTC", "machine": "2 CPUs", "load": 1.0,
           "figures": {"hook": 31.0, "scrape": 0.28}}
    text = markdown(doc)
    assert text.startswith(BEGIN) and text.endswith(END)
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "---" not in ln]
    assert rows[1:] == ["| exporter scrape (GET /metrics), median | s | 0.28 | ≤ 1 |",
                        "| hook, everything down, median | ms | 31.0 | ≤ 200 |"]


def test_an_update_of_some_groups_keeps_the_other_committed_figures() -> None:
    """`budget.py --only service,startup --update` replaces those figures alone, and the
    table says when they were measured again."""
    committed = {"measured": "2026-11-25 19:39 UTC", "machine": "m", "load": 1.9,
                 "load_after": 2.2, "small": False,
                 "figures": {"hook": 27.6, "service_p99": 41.9, "startup_client": 1.67}}
    run = {"measured": "2026-11-25 23:30 UTC", "machine": "m", "load": 5.0,
           "load_after": 6.0, "small": False,
           "figures": {"service_p99": 90.0, "startup_client": 1.4}}
    doc = merged(committed, run, {"service", "startup"})
    assert doc["figures"] == {"hook": 27.6, "service_p99": 90.0, "startup_client": 1.4}
    assert doc["measured"] == "2026-11-25 19:39 UTC"
    assert doc["updates"] == [{"groups": "service,startup", "measured": "2026-11-25 23:30 UTC",
                               "load": 5.0, "load_after": 6.0}]
    assert "service,startup measured again 2026-11-25 23:30 UTC, load 5.0" in markdown(doc)
    again = merged(doc, {**run, "measured": "later"}, {"service", "startup"})
    assert [u["measured"] for u in again["updates"]] == ["later"]  # not listed twice


def test_a_figure_worse_than_committed_within_budget_is_measured_again() -> None:
    from bench.budget_rules import better, suspects

    committed = {"hook": 100.0, "parse_ost": 200.0, "top": 0.5}
    figures = {"hook": 120.0, "parse_ost": 190.0, "top": 1.5}
    # hook: 20 % worse, within budget -> again; parse: 5 % -> fine; top: over budget -> fails
    assert suspects(figures, committed) == {"hook"}
    assert better("hook", 120.0, 101.0) == 101.0  # lower is better
    assert better("parse_ost", 180.0, 210.0) == 210.0  # higher is better


def test_a_maximum_over_a_run_is_judged_by_its_budget_only() -> None:
    assert verdict("pack_copy_wait", 106.0, 50.0) == ""
    assert verdict("pack_copy_wait", 1200.0, 50.0) == "over budget"
