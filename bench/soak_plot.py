"""The soak's CSV and plot (bench/soak.py): one row per sample, one PNG of the curves the
bounds are judged on. Apart from soak.py so that `--replot` draws a finished run again
without starting anything."""

from __future__ import annotations

import csv
from pathlib import Path


def write(out: Path, rows: list[dict[str, float]]) -> None:
    with (out / "soak.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(out, rows)


def read(out: Path) -> list[dict[str, float]]:
    with (out / "soak.csv").open() as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def plot(out: Path, rows: list[dict[str, float]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    day = [r["sim_day"] for r in rows]
    live = rows[:-1]  # the last sample is taken after the daemons stopped
    fig, ax = plt.subplots(3, 2, figsize=(12, 11), sharex=True)
    for key in rows[0]:
        if key.endswith("_rss"):
            ax[0][0].plot(day[:-1], [r[key] / 1e6 for r in live], label=key[:-4])
        if key.endswith("_fds"):
            ax[0][1].plot(day[:-1], [r[key] for r in live], label=key[:-4])
    ax[0][0].set_title("RSS (MB)")
    ax[0][1].set_title("open files")
    ax[1][0].plot(day, [r["db_bytes"] / 1e6 for r in rows], label="database")
    ax[1][0].plot(day, [r["kept_bytes"] / 1e6 for r in rows], label="kept batches")
    ax[1][0].plot(day, [r["spool_bytes"] / 1e6 for r in rows], label="collector spool")
    ax[1][0].set_title("size (MB)")
    ax[1][1].plot(day, [r["rows_expected"] / 1e6 for r in rows], label="expected", lw=4,
                  alpha=0.4)
    ax[1][1].plot(day, [r["rows_stored"] / 1e6 for r in rows], label="stored (ingest_batch)")
    ax[1][1].plot(day, [r["rows_in_table"] / 1e6 for r in rows],
                  label="in jobstats_delta (retention 7 d)")
    ax[1][1].set_title("rows (millions)")
    if "hook_spool" in rows[0]:
        ax[2][0].plot(day, [r["hook_spool"] for r in rows], label="hook spool (files)")
        ax[2][0].plot(day, [r["mail_queue"] for r in rows], label="mail queue (queued, sending)")
        ax[2][0].set_title("spool and queue depth")
        ax[2][1].plot(day, [r["jobs_hooked"] for r in rows], label="jobs hooked", lw=4,
                      alpha=0.4)
        ax[2][1].plot(day, [r["mails"] for r in rows], label="mails at the SMTP sink")
        ax[2][1].plot(day, [r["errors"] for r in rows], label="errors")
        ax[2][1].set_title("jobs, mails, errors")
    for a in ax.flat:
        a.legend(fontsize=8)
        a.grid(alpha=0.3)
    for a in ax[2]:
        a.set_xlabel("simulated day")
    fig.tight_layout()
    fig.savefig(out / "soak.png", dpi=80)


def daily_peaks(rows: list[dict[str, float]], from_day: float) -> dict[int, float]:
    """The database's largest size of each whole simulated day from `from_day` on: the
    size is a sawtooth (a day's partition dropped each night), its peaks are the trend."""
    peaks: dict[int, float] = {}
    for r in rows:
        if r["sim_day"] >= from_day:
            day = int(r["sim_day"])
            peaks[day] = max(peaks.get(day, 0.0), r["db_bytes"])
    return peaks


def _judge_db_size(live: list[dict[str, float]], settle_day: float | None) -> bool:
    """Flat once retention applies: the daily peaks of the run's second half are within
    +10 % of the first half's. Judged only when both retentions apply for 6 days or more
    of the run (a site's 5-year results make the database grow until then, by design)."""
    if settle_day is None:
        settle_day = 9.0
    peaks = daily_peaks(live, settle_day)
    days = sorted(peaks)[:-1]  # the last day is partial (the drain)
    if len(days) < 6:
        print(f"database from day {settle_day:.0f} on: not judged (both retentions apply for "
              f"{len(days)} whole days of the run; see --retention-results)")
        return True
    half = len(days) // 2
    first = max(peaks[d] for d in days[:half])
    second = max(peaks[d] for d in days[half:])
    grew = (second / first - 1) * 100
    print(f"database once both retentions apply (day {days[0]} on): daily peaks "
          + ", ".join(f"{peaks[d] / 1e6:.0f}" for d in days)
          + f" MB; second half's highest {grew:+.1f} % over the first's (bound +10 %)")
    return grew <= 10


def judge(rows: list[dict[str, float]], names: list[str], daemons: list[str],
          settle_day: float | None = None) -> int:
    """Print the bounds; 1 when one is broken. `settle_day`: the simulated day from which
    both retentions apply (soak.py's --retention and --retention-results)."""
    last, live = rows[-1], rows[:-1] or rows  # the last sample is after the daemons stopped
    first_day = [r for r in live if r["sim_day"] <= 1.0] or live[:1]
    ok = True
    for name in daemons:
        base = max(r[name + "_rss"] for r in first_day)
        peak = max(r[name + "_rss"] for r in live)
        fds = (min(r[name + "_fds"] for r in live), max(r[name + "_fds"] for r in live))
        grew = (peak / base - 1) * 100 if base else float("nan")
        print(f"{name}: RSS first day {base / 1e6:.1f} MB, peak {peak / 1e6:.1f} MB "
              f"({grew:+.0f} %), open files {fds[0]:.0f}-{fds[1]:.0f}")
        ok &= bool(base) and grew <= 10
    if "prometheus_rss" in last:
        print(f"prometheus (not slurm-io's, not bounded): RSS "
              f"{min(r['prometheus_rss'] for r in live) / 1e6:.0f}-"
              f"{max(r['prometheus_rss'] for r in live) / 1e6:.0f} MB")
    ok &= _judge_db_size(live, settle_day)
    print(f"rows stored {int(last['rows_stored']):,}, expected {int(last['rows_expected']):,}; "
          f"spool at the end {int(last['spool_bytes'])} bytes; kept {last['kept_bytes'] / 1e6:.1f}"
          f" MB; errors {int(last['errors'])}")
    ok &= last["rows_stored"] == last["rows_expected"] and last["spool_bytes"] == 0
    ok &= last["errors"] == 0
    if "jobs_hooked" in last:
        print(f"jobs hooked {int(last['jobs_hooked'])}, mailed exactly once "
              f"{int(last['jobs_mailed_once'])}, twice or more {int(last['jobs_mailed_twice'])}"
              f", mails of no hooked job {int(last['mails_not_hooked'])}, incomplete "
              f"{int(last['mails_incomplete'])}; queue at the end {int(last['mail_queue'])} "
              f"(sent {int(last['queue_sent'])}, skipped {int(last['queue_skipped'])}, failed "
              f"{int(last['queue_failed'])}); hook spool at the end {int(last['hook_spool'])}; "
              f"alert mails {int(last['alert_mails'])}; timer runs {int(last['timer_runs'])}"
              f"; questions to jobio serve {int(last.get('client_asks', 0))}")
        ok &= last["jobs_hooked"] > 0 and last["jobs_mailed_once"] == last["jobs_hooked"]
        ok &= last["jobs_mailed_twice"] == last["mails_not_hooked"] == 0
        ok &= last["mails_incomplete"] == last["mail_queue"] == last["hook_spool"] == 0
    return 0 if ok else 1
