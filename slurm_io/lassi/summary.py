"""A job's LASSi summary over its stored hours (typed; `jobio show` and the mails print it).

Pure and free of psycopg: the service's clients rebuild it from JSON (`from_json`) to render
what the service sent, as they rebuild the report it belongs to (report.jobreport).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LassiSummary:
    """Risk scores over a job's stored LASSi hours (lassi.days.job_lassi)."""

    fs: list[str]
    hours: int
    risk_oss_max: float
    risk_mds_max: float
    risk_oss_mean: float
    risk_mds_mean: float
    risky_hours: int
    read_kb_ops: float | None
    write_kb_ops: float | None
    risks_max: dict[str, float]  # metric -> its worst risk, worst first

    def as_json(self) -> dict[str, Any]:
        return {
            "fs": self.fs, "hours": self.hours,
            "risk_oss_max": self.risk_oss_max, "risk_mds_max": self.risk_mds_max,
            "risk_oss_mean": self.risk_oss_mean, "risk_mds_mean": self.risk_mds_mean,
            "risky_hours": self.risky_hours, "read_kb_ops": self.read_kb_ops,
            "write_kb_ops": self.write_kb_ops, "risks_max": self.risks_max,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> LassiSummary | None:
        return None if not d else cls(**d)
